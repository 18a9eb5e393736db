// SPDX-License-Identifier: Apache-2.0
// Links libmc_te with what `pkg-config --libs mc-te` says: an installed
// prefix, or a build tree through mc-te-uninstalled.pc (PKG_CONFIG_PATH; see
// test/integration/bindings_pc.sh). Run paths it names are passed on to the
// crates that depend on this one as DEP_MC_TE_RPATH (links = "mc_te"), since
// a build script's link arguments reach only its own package.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = match Command::new(&pkg_config).args(["--libs", "mc-te"]).output() {
        Ok(out) => out,
        Err(e) => panic!("mc-te-sys: cannot run {}: {}", pkg_config, e),
    };
    if !out.status.success() {
        panic!(
            "mc-te-sys: `{} --libs mc-te` failed ({}): {}; set PKG_CONFIG_PATH to the \
             directory of mc-te.pc (an installed mc) or of mc-te-uninstalled.pc (a build \
             tree, test/integration/bindings_pc.sh)",
            pkg_config,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let libs = String::from_utf8_lossy(&out.stdout).to_string();
    let mut rpaths = Vec::new();
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={}", lib);
        } else if let Some(paths) = flag.strip_prefix("-Wl,-rpath,") {
            rpaths.push(paths.to_string());
        }
    }
    if !rpaths.is_empty() {
        let joined = rpaths.join(":");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", joined);
        println!("cargo:rpath={}", joined);
    }
}
