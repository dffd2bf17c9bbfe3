//! Servo-bus requests read by the servo emulator. The first byte picks the chain as in
//! `embodia bench fuzz`'s `servo-requests` seeds (`protocol · 3 + transaction`): below 3 mod 6 a
//! Feetech (protocol 0) chain of servos 1–3, else a Dynamixel (2.0) one.
use std::time::{Duration, Instant};

use embodia_deploy::ServoChain;
use embodia_deploy::dynamixel::control_table::Model;
use embodia_deploy::emulator::Responder;

fn main() {
    let mut out = Vec::new();
    afl::fuzz!(|data: &[u8]| {
        let Some((&kind, requests)) = data.split_first() else { return };
        let chain = match kind % 6 < 3 {
            true => ServoChain::new(&[1, 2, 3]),
            false => ServoChain::dynamixel(&[1, 2, 3].map(|id| (id, Model::Xl330M288))),
        };
        let now = Instant::now();
        let mut responder = Responder::new(chain, now);
        responder.receive(requests, now);
        out.clear();
        responder.transmit(now + Duration::from_secs(1), &mut out);
    });
}
