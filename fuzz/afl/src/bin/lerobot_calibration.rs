//! LeRobot's calibration files (`calibrate --import`).
fn main() {
    let path = embodia_fuzz_afl::scratch_file("lerobot-calibration.json");
    afl::fuzz!(|data: &[u8]| {
        if std::fs::write(&path, data).is_ok() {
            let _ = embodia_robots::Calibration::import_lerobot(&path);
        }
    });
}
