//! MJCF files (`robot check`, a task's robot given as `.xml`).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(xml) = std::str::from_utf8(data) {
            let _ = embodia_robots::parse_mjcf(xml, None);
        }
    });
}
