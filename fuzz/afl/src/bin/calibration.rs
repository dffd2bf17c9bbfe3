//! embodia's calibration files (`deploy --calibration`).
fn main() {
    let path = embodia_fuzz_afl::scratch_file("calibration.json");
    afl::fuzz!(|data: &[u8]| {
        if std::fs::write(&path, data).is_ok() {
            let _ = embodia_robots::Calibration::load(&path);
        }
    });
}
