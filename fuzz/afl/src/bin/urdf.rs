//! URDF files (`robot check`, every task's robot).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(xml) = std::str::from_utf8(data) {
            let _ = embodia_robots::parse_urdf(xml, None);
        }
    });
}
