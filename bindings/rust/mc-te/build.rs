// SPDX-License-Identifier: Apache-2.0
// The run paths of libmc_te that mc-te-sys found (DEP_MC_TE_RPATH), for this
// package's tests and examples: link arguments of mc-te-sys's build script
// do not reach them.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MC_TE_RPATH");
    if let Ok(rpath) = std::env::var("DEP_MC_TE_RPATH") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", rpath);
    }
}
