module mc/te

go 1.19
