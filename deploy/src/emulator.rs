//! An emulated chain of STS3215 servos: register memory, motion toward the goal, status
//! replies, and injected faults.
//!
//! [`ServoChain`] answers protocol-0 packets the way a bus of STS3215 servos does: PING and
//! READ always get a status reply, WRITE/REG_WRITE only when the servo's status return level is
//! 1 (the factory setting), nothing answers the broadcast id except SYNC_READ (each listed
//! servo in turn). With torque on, each servo moves its present position toward the goal with
//! a trapezoidal speed profile limited by the goal speed and acceleration registers (0 = the
//! firmware's maximum) and, near the goal, by its P gain (speed ≤ P × error, a modelling
//! choice: the firmware's loop is not published); with torque off it stays where it is, or where a hand puts it
//! ([`ServoChain::move_by_hand`]). The error byte reports voltage outside the limits, a
//! temperature above the limit and overload, from the present registers.
//!
//! [`Responder`] turns request bytes into reply bytes with their due times and applies the
//! [`Fault`]s queued with [`ServoChain::inject`]; [`crate::pty`] serves it on a
//! pseudo-terminal and [`crate::transport::EmulatedPort`] in memory.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::control_table::{self as ct, Register};
use crate::protocol::{BROADCAST_ID, Decoded, Decoder, Instruction, MAX_PACKET, Packet, StatusFlags, encode};

/// A fault the emulator injects into the next reply of one servo, or into its state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// The reply is never sent.
    Drop,
    /// The reply is sent this late.
    Delay(Duration),
    /// One byte after the header of the reply is flipped (checksum no longer matches).
    Corrupt,
    /// Only the first bytes of the reply are sent.
    Truncate,
    /// The servo answers nothing at all for this long.
    Silence(Duration),
    /// The input voltage drops below the minimum limit for this long (voltage error bit).
    Undervoltage(Duration),
    /// The temperature rises above the maximum limit for this long (overheat error bit).
    Overheat(Duration),
    /// The servo reports an overload for this long (overload error bit).
    Overload(Duration),
}

impl Fault {
    /// Short name of the kind, e.g. `"drop"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Drop => "drop",
            Fault::Delay(_) => "delay",
            Fault::Corrupt => "corrupt",
            Fault::Truncate => "truncate",
            Fault::Silence(_) => "silence",
            Fault::Undervoltage(_) => "undervoltage",
            Fault::Overheat(_) => "overheat",
            Fault::Overload(_) => "overload",
        }
    }

    /// Faults that change the servo's state rather than one reply.
    fn is_state_fault(&self) -> bool {
        matches!(self, Fault::Silence(_) | Fault::Undervoltage(_) | Fault::Overheat(_) | Fault::Overload(_))
    }
}

/// A fault as it took effect: which servo, what, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InjectedFault {
    /// Servo id.
    pub id: u8,
    /// The fault.
    pub fault: Fault,
    /// When it took effect (a reply fault: when the affected reply was due).
    pub at: Instant,
}

/// One emulated STS3215.
#[derive(Debug, Clone)]
pub struct Servo {
    mem: [u8; ct::MEMORY_SIZE],
    /// Position, ticks (fractional; the register holds it rounded).
    position: f64,
    /// Speed, ticks/s.
    speed: f64,
    /// A REG_WRITE waiting for ACTION: address and data.
    pending: Option<(u8, Vec<u8>)>,
    silent_until: Option<Instant>,
    undervoltage_until: Option<Instant>,
    overheat_until: Option<Instant>,
    overload_until: Option<Instant>,
    /// Faults for the next replies.
    reply_faults: VecDeque<Fault>,
}

impl Servo {
    /// A factory-default STS3215 with `id`.
    pub fn new(id: u8) -> Self {
        Self {
            mem: ct::sts3215_defaults(id),
            position: 2048.0,
            speed: 0.0,
            pending: None,
            silent_until: None,
            undervoltage_until: None,
            overheat_until: None,
            overload_until: None,
            reply_faults: VecDeque::new(),
        }
    }

    /// The servo's id register.
    pub fn id(&self) -> u8 {
        self.mem[ct::ID.addr as usize]
    }

    /// A register's raw value (1 or 2 bytes, little-endian).
    pub fn get(&self, r: Register) -> u16 {
        let a = r.addr as usize;
        if r.size == 2 { u16::from_le_bytes([self.mem[a], self.mem[a + 1]]) } else { u16::from(self.mem[a]) }
    }

    fn set(&mut self, r: Register, v: u16) {
        let a = r.addr as usize;
        self.mem[a] = v as u8;
        if r.size == 2 {
            self.mem[a + 1] = (v >> 8) as u8;
        }
    }

    /// Present position, ticks (fractional).
    pub fn position(&self) -> f64 {
        self.position
    }

    /// Error byte of a status reply now.
    pub fn status(&self) -> StatusFlags {
        let mut bits = 0;
        let v = self.get(ct::PRESENT_VOLTAGE);
        if v < self.get(ct::MIN_VOLTAGE) || v > self.get(ct::MAX_VOLTAGE) {
            bits |= StatusFlags::VOLTAGE;
        }
        if self.get(ct::PRESENT_TEMPERATURE) > self.get(ct::MAX_TEMPERATURE) {
            bits |= StatusFlags::OVERHEAT;
        }
        if self.overload_until.is_some() {
            bits |= StatusFlags::OVERLOAD;
        }
        StatusFlags(bits)
    }

    fn write(&mut self, addr: u8, data: &[u8]) {
        for (i, &b) in data.iter().enumerate() {
            let a = addr as usize + i;
            // Read-only registers (model, firmware, present values) ignore writes.
            let read_only = a <= 4 || (56..=70).contains(&a);
            if a < ct::MEMORY_SIZE && !read_only {
                self.mem[a] = b;
            }
        }
        let (lo, hi) = (self.get(ct::MIN_POSITION_LIMIT), self.get(ct::MAX_POSITION_LIMIT));
        if lo < hi {
            let goal = self.get(ct::GOAL_POSITION).clamp(lo, hi);
            self.set(ct::GOAL_POSITION, goal);
        }
    }

    fn read(&self, addr: u8, len: u8, out: &mut [u8]) {
        for (i, o) in out[..len as usize].iter_mut().enumerate() {
            *o = self.mem.get(addr as usize + i).copied().unwrap_or(0);
        }
    }

    /// Advances the motion by `dt` seconds and ends state faults that are over at `now`.
    fn advance(&mut self, dt: f64, now: Instant) {
        let over = |t: &mut Option<Instant>| {
            if t.is_some_and(|t| now >= t) {
                *t = None;
            }
        };
        over(&mut self.silent_until);
        over(&mut self.overload_until);
        if self.undervoltage_until.is_some_and(|t| now >= t) {
            self.undervoltage_until = None;
            self.set(ct::PRESENT_VOLTAGE, 120);
        }
        if self.overheat_until.is_some_and(|t| now >= t) {
            self.overheat_until = None;
            self.set(ct::PRESENT_TEMPERATURE, 30);
        }
        if self.get(ct::TORQUE_ENABLE) == 0 {
            self.speed = 0.0;
        } else {
            let goal = f64::from(self.get(ct::GOAL_POSITION));
            let v_max = match ct::from_sign_magnitude(self.get(ct::GOAL_SPEED), 15).unsigned_abs() {
                0 => ct::MAX_SPEED_TICKS,
                v => f64::from(v).min(ct::MAX_SPEED_TICKS),
            };
            let a_max = match self.get(ct::ACCELERATION) {
                0 => ct::MAX_ACCELERATION_TICKS,
                a => f64::from(a) * 100.0,
            };
            // The position loop's proportional gain, read as 1/s: near the goal the speed is
            // at most P × error, a first-order approach (factory P = 32: ~31 ms time constant).
            let kp = f64::from(self.get(ct::P_COEFFICIENT).max(1));
            // Sub-steps of at most 1 ms keep the braking distance accurate.
            let steps = (dt / 1e-3).ceil().max(1.0) as usize;
            let h = dt / steps as f64;
            for _ in 0..steps {
                let err = goal - self.position;
                // Fastest speed from which the servo can still stop at the goal.
                let v_des = err.signum() * v_max.min((2.0 * a_max * err.abs()).sqrt()).min(kp * err.abs());
                self.speed += (v_des - self.speed).clamp(-a_max * h, a_max * h);
                let next = self.position + self.speed * h;
                if (goal - next).signum() != err.signum() || err == 0.0 {
                    self.position = goal;
                    self.speed = 0.0;
                } else {
                    self.position = next;
                }
            }
        }
        let pos = self.position.round().clamp(0.0, 4095.0) as u16;
        self.set(ct::PRESENT_POSITION, pos);
        self.set(ct::PRESENT_SPEED, ct::to_sign_magnitude(self.speed.round() as i32, 15));
        let err = f64::from(self.get(ct::GOAL_POSITION)) - self.position;
        let on = self.get(ct::TORQUE_ENABLE) != 0;
        // Load as the position loop's effort: proportional to the error, saturating at 100 %.
        let load = if on { (err * 2.0).clamp(-1000.0, 1000.0) as i32 } else { 0 };
        self.set(ct::PRESENT_LOAD, ct::to_sign_magnitude(load, 10));
        self.set(ct::PRESENT_CURRENT, ct::to_sign_magnitude(load / 4, 15));
        self.set(ct::MOVING, u16::from(on && (err.abs() >= 1.0 || self.speed != 0.0)));
        let status = self.status().0;
        self.set(ct::STATUS, u16::from(status));
    }
}

/// A reply the chain produced: which servo, its bytes.
#[derive(Debug, Clone)]
struct Reply {
    id: u8,
    len: usize,
    bytes: [u8; MAX_PACKET],
}

/// A bus of emulated STS3215 servos.
#[derive(Debug, Clone)]
pub struct ServoChain {
    servos: Vec<Servo>,
    log: Vec<InjectedFault>,
    /// Goal positions written, in bus order, when recording (id, ticks).
    goal_writes: Option<Vec<(u8, u16)>>,
}

impl ServoChain {
    /// Factory-default servos with these ids, in bus order.
    pub fn new(ids: &[u8]) -> Self {
        Self { servos: ids.iter().map(|&id| Servo::new(id)).collect(), log: Vec::new(), goal_writes: None }
    }

    /// Starts recording every goal position written (for checking what reached the servos).
    pub fn record_goal_writes(&mut self) {
        self.goal_writes.get_or_insert_with(Vec::new);
    }

    /// Moves the goal writes recorded so far, in the order the servos received them, to `out`.
    pub fn take_goal_writes(&mut self, out: &mut Vec<(u8, u16)>) {
        if let Some(w) = &mut self.goal_writes {
            out.append(w);
        }
    }

    /// Writes `data` at `addr` of the servo at `index`, recording a goal change.
    fn write_at(&mut self, index: usize, addr: u8, data: &[u8]) {
        let s = &mut self.servos[index];
        s.write(addr, data);
        let end = addr as usize + data.len();
        if let Some(w) = &mut self.goal_writes
            && addr <= ct::GOAL_POSITION.addr
            && end >= ct::GOAL_POSITION.addr as usize + 2
        {
            w.push((s.id(), s.get(ct::GOAL_POSITION)));
        }
    }

    fn index_of(&self, id: u8) -> Option<usize> {
        self.servos.iter().position(|s| s.id() == id)
    }

    /// The servo with `id`.
    pub fn servo(&self, id: u8) -> Option<&Servo> {
        self.servos.iter().find(|s| s.id() == id)
    }

    fn servo_mut(&mut self, id: u8) -> Option<&mut Servo> {
        self.servos.iter_mut().find(|s| s.id() == id)
    }

    /// Puts the servo's shaft at `ticks` as a hand would (only moves it while torque is off,
    /// like a real servo that holds its goal). Returns whether it moved.
    pub fn move_by_hand(&mut self, id: u8, ticks: f64) -> bool {
        match self.servo_mut(id) {
            Some(s) if s.get(ct::TORQUE_ENABLE) == 0 => {
                s.position = ticks.clamp(0.0, 4095.0);
                s.advance(0.0, Instant::now());
                true
            }
            _ => false,
        }
    }

    /// Queues `fault` for servo `id` at `now`: reply faults hit its next reply, state faults
    /// start now. Unknown ids are ignored (returns false).
    pub fn inject(&mut self, id: u8, fault: Fault, now: Instant) -> bool {
        let Some(s) = self.servo_mut(id) else { return false };
        match fault {
            Fault::Silence(d) => s.silent_until = Some(now + d),
            Fault::Undervoltage(d) => {
                s.undervoltage_until = Some(now + d);
                let v = s.get(ct::MIN_VOLTAGE).saturating_sub(5);
                s.set(ct::PRESENT_VOLTAGE, v);
            }
            Fault::Overheat(d) => {
                s.overheat_until = Some(now + d);
                let t = s.get(ct::MAX_TEMPERATURE) + 5;
                s.set(ct::PRESENT_TEMPERATURE, t);
            }
            Fault::Overload(d) => s.overload_until = Some(now + d),
            _ => {
                s.reply_faults.push_back(fault);
                return true;
            }
        }
        s.advance(0.0, now);
        self.log.push(InjectedFault { id, fault, at: now });
        true
    }

    /// Every fault that took effect so far, in order.
    pub fn fault_log(&self) -> &[InjectedFault] {
        &self.log
    }

    /// Advances every servo by `dt` seconds of motion, ending at `now`.
    pub fn advance(&mut self, dt: f64, now: Instant) {
        for s in &mut self.servos {
            s.advance(dt, now);
        }
    }

    /// Executes one request packet and appends the replies (in bus order) to `replies`.
    fn handle(&mut self, p: Packet<'_>, replies: &mut Vec<Reply>) {
        let Some(instr) = Instruction::from_byte(p.x) else { return };
        if p.id == BROADCAST_ID {
            match instr {
                Instruction::SyncRead if p.params.len() >= 2 => {
                    let (addr, len) = (p.params[0], p.params[1]);
                    for &id in &p.params[2..] {
                        if let Some(s) = self.servo(id) {
                            let mut data = [0u8; 255];
                            s.read(addr, len, &mut data);
                            push_reply(replies, s, &data[..len as usize]);
                        }
                    }
                }
                Instruction::SyncWrite if p.params.len() >= 2 => {
                    let (addr, len) = (p.params[0], p.params[1] as usize);
                    for item in p.params[2..].chunks_exact(len + 1) {
                        if let Some(i) = self.index_of(item[0]) {
                            self.write_at(i, addr, &item[1..]);
                        }
                    }
                }
                Instruction::Write | Instruction::RegWrite if !p.params.is_empty() => {
                    for i in 0..self.servos.len() {
                        match instr {
                            Instruction::Write => self.write_at(i, p.params[0], &p.params[1..]),
                            _ => self.servos[i].pending = Some((p.params[0], p.params[1..].to_vec())),
                        }
                    }
                }
                Instruction::Action => {
                    for i in 0..self.servos.len() {
                        if let Some((addr, data)) = self.servos[i].pending.take() {
                            self.write_at(i, addr, &data);
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        let Some(i) = self.index_of(p.id) else { return };
        let replies_to_all = self.servos[i].get(ct::RESPONSE_STATUS_LEVEL) != 0;
        match instr {
            Instruction::Ping => push_reply(replies, &self.servos[i], &[]),
            Instruction::Read if p.params.len() == 2 => {
                let mut data = [0u8; 255];
                self.servos[i].read(p.params[0], p.params[1], &mut data);
                push_reply(replies, &self.servos[i], &data[..p.params[1] as usize]);
            }
            Instruction::Write | Instruction::RegWrite | Instruction::Action => {
                match instr {
                    Instruction::Write if !p.params.is_empty() => self.write_at(i, p.params[0], &p.params[1..]),
                    Instruction::RegWrite if !p.params.is_empty() => {
                        self.servos[i].pending = Some((p.params[0], p.params[1..].to_vec()))
                    }
                    Instruction::Action => {
                        if let Some((addr, data)) = self.servos[i].pending.take() {
                            self.write_at(i, addr, &data);
                        }
                    }
                    _ => return,
                }
                if replies_to_all {
                    push_reply(replies, &self.servos[i], &[]);
                }
            }
            _ => {}
        }
    }
}

fn push_reply(replies: &mut Vec<Reply>, s: &Servo, data: &[u8]) {
    let mut r = Reply { id: s.id(), len: 0, bytes: [0; MAX_PACKET] };
    // A status reply has at most 253 data bytes (the request's length byte bounds it).
    r.len = encode(r.id, s.status().0, &data[..data.len().min(253)], &mut r.bytes).unwrap_or(0);
    replies.push(r);
}

/// Turns request bytes into timed reply bytes for a [`ServoChain`], applying its faults.
#[derive(Debug)]
pub struct Responder {
    /// The servos.
    pub chain: ServoChain,
    decoder: Decoder,
    replies: Vec<Reply>,
    /// Replies waiting for their due time, in due order.
    outbox: VecDeque<(Instant, Reply)>,
    last: Instant,
    /// Replies corrupted so far (chooses which byte the next corruption flips).
    corrupted: usize,
}

impl Responder {
    /// A responder for `chain`, its clock starting at `now`.
    pub fn new(chain: ServoChain, now: Instant) -> Self {
        Self { chain, decoder: Decoder::new(), replies: Vec::new(), outbox: VecDeque::new(), last: now, corrupted: 0 }
    }

    /// Advances the servos' motion to `now`.
    pub fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.chain.advance(dt, now);
    }

    /// Takes received bytes at `now` and queues the replies they call for.
    pub fn receive(&mut self, bytes: &[u8], now: Instant) {
        self.advance(now);
        self.decoder.push(bytes);
        loop {
            let packet = match self.decoder.next_packet() {
                Decoded::Packet(p) => p,
                Decoded::BadChecksum { .. } => continue,
                Decoded::Incomplete => break,
            };
            self.chain.handle(packet, &mut self.replies);
        }
        for mut r in self.replies.drain(..) {
            let Some(s) = self.chain.servos.iter_mut().find(|s| s.id() == r.id) else { continue };
            if s.silent_until.is_some() {
                continue;
            }
            let mut due = now;
            if let Some(fault) = s.reply_faults.pop_front() {
                debug_assert!(!fault.is_state_fault());
                match fault {
                    Fault::Drop => r.len = 0,
                    Fault::Delay(d) => due = now + d,
                    // Flip the error byte, a data byte or the checksum, in turn.
                    Fault::Corrupt => {
                        self.corrupted += 1;
                        r.bytes[4 + self.corrupted % (r.len - 4)] ^= 0x5A;
                    }
                    Fault::Truncate => r.len = (r.len / 2).max(1),
                    _ => {}
                }
                self.chain.log.push(InjectedFault { id: r.id, fault, at: now });
            }
            if r.len > 0 {
                let at = self.outbox.iter().position(|(t, _)| *t > due).unwrap_or(self.outbox.len());
                self.outbox.insert(at, (due, r));
            }
        }
    }

    /// Appends the bytes of every reply due by `now` to `out`.
    pub fn transmit(&mut self, now: Instant, out: &mut Vec<u8>) {
        while self.outbox.front().is_some_and(|(t, _)| *t <= now) {
            let (_, r) = self.outbox.pop_front().expect("checked non-empty");
            out.extend_from_slice(&r.bytes[..r.len]);
        }
    }

    /// When the next queued reply is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.outbox.front().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Instruction as I;

    fn request(r: &mut Responder, id: u8, instr: I, params: &[u8], now: Instant) -> Vec<Packet<'static>> {
        let mut buf = [0u8; MAX_PACKET];
        let n = encode(id, instr as u8, params, &mut buf).unwrap();
        r.receive(&buf[..n], now);
        let mut out = Vec::new();
        r.transmit(now, &mut out);
        let mut d = Decoder::new();
        d.push(&out);
        let mut packets = Vec::new();
        while let Decoded::Packet(p) = d.next_packet() {
            packets.push(Packet { id: p.id, x: p.x, params: Vec::leak(p.params.to_vec()) });
        }
        packets
    }

    #[test]
    fn ping_read_write_and_broadcast_follow_the_protocol() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1, 2]), t0);
        let p = request(&mut r, 1, I::Ping, &[], t0);
        assert_eq!((p.len(), p[0].id, p[0].x, p[0].params.len()), (1, 1, 0, 0));
        let p = request(&mut r, 2, I::Read, &[ct::MODEL_NUMBER.addr, 2], t0);
        assert_eq!(p[0].params, &777u16.to_le_bytes());
        // Unknown ids and broadcast writes get no reply.
        assert!(request(&mut r, 9, I::Ping, &[], t0).is_empty());
        assert!(request(&mut r, BROADCAST_ID, I::Write, &[ct::TORQUE_ENABLE.addr, 1], t0).is_empty());
        assert_eq!(r.chain.servo(2).unwrap().get(ct::TORQUE_ENABLE), 1);
        // Write gets an empty status reply at the factory status level.
        let p = request(&mut r, 1, I::Write, &[ct::GOAL_POSITION.addr, 0x00, 0x0C], t0);
        assert_eq!((p.len(), p[0].params.len()), (1, 0));
        assert_eq!(r.chain.servo(1).unwrap().get(ct::GOAL_POSITION), 0x0C00);
    }

    #[test]
    fn sync_read_replies_in_list_order_and_sync_write_is_silent() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1, 2, 3]), t0);
        let p = request(&mut r, BROADCAST_ID, I::SyncWrite, &[42, 2, 3, 0x00, 0x04, 1, 0x00, 0x0C], t0);
        assert!(p.is_empty());
        let p = request(&mut r, BROADCAST_ID, I::SyncRead, &[42, 2, 3, 1, 2], t0);
        let got: Vec<_> = p.iter().map(|p| (p.id, u16::from_le_bytes([p.params[0], p.params[1]]))).collect();
        assert_eq!(got, [(3, 0x0400), (1, 0x0C00), (2, 2048)]);
    }

    #[test]
    fn servo_moves_to_goal_within_speed_and_acceleration_limits() {
        let t0 = Instant::now();
        let mut c = ServoChain::new(&[1]);
        let s = &mut c.servos[0];
        s.write(ct::TORQUE_ENABLE.addr, &[1]);
        s.write(ct::ACCELERATION.addr, &[50]);
        s.write(ct::GOAL_POSITION.addr, &3048u16.to_le_bytes());
        let mut last = 2048.0;
        let mut top = 0.0f64;
        for i in 1..=200 {
            s.advance(0.01, t0 + Duration::from_millis(10 * i));
            let v = (s.position - last) / 0.01;
            assert!(v <= ct::MAX_SPEED_TICKS + 1e-6, "speed {v}");
            top = top.max(v);
            last = s.position;
        }
        assert_eq!(s.get(ct::PRESENT_POSITION), 3048);
        assert_eq!(s.get(ct::MOVING), 0);
        // 1000 ticks at 5000 ticks/s² cannot reach 3072 ticks/s: peak is √(a·d) ≈ 2236.
        assert!((2000.0..2300.0).contains(&top), "peak speed {top}");
    }

    #[test]
    fn a_lower_p_gain_approaches_the_goal_more_slowly() {
        let t0 = Instant::now();
        let settle = |p: u8| {
            let mut s = Servo::new(1);
            s.write(ct::P_COEFFICIENT.addr, &[p]);
            s.write(ct::TORQUE_ENABLE.addr, &[1]);
            s.write(ct::GOAL_POSITION.addr, &2248u16.to_le_bytes());
            (1..).find(|&ms| {
                s.advance(0.001, t0 + Duration::from_millis(ms));
                (2248.0 - s.position) < 200.0 * (-1.0f64).exp()
            })
        };
        // From rest the acceleration limit dominates; then speed ≤ P × error slows the approach.
        let (fast, slow) = (settle(32).unwrap(), settle(8).unwrap());
        assert!(slow > fast + 30 && fast < 120, "{fast} ms, {slow} ms");
    }

    #[test]
    fn goals_are_clamped_to_the_position_limits_and_torque_off_does_not_move() {
        let t0 = Instant::now();
        let mut c = ServoChain::new(&[1]);
        let s = &mut c.servos[0];
        s.write(ct::MAX_POSITION_LIMIT.addr, &3000u16.to_le_bytes());
        s.write(ct::GOAL_POSITION.addr, &4000u16.to_le_bytes());
        assert_eq!(s.get(ct::GOAL_POSITION), 3000);
        s.advance(1.0, t0);
        assert_eq!(s.get(ct::PRESENT_POSITION), 2048);
        assert!(c.move_by_hand(1, 1000.0));
        assert_eq!(c.servo(1).unwrap().get(ct::PRESENT_POSITION), 1000);
    }

    #[test]
    fn reply_faults_and_state_faults_change_what_the_bus_sees() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1]), t0);
        r.chain.inject(1, Fault::Drop, t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty());
        r.chain.inject(1, Fault::Corrupt, t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty(), "a corrupted reply must not decode");
        r.chain.inject(1, Fault::Delay(Duration::from_millis(50)), t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty());
        let mut late = Vec::new();
        r.transmit(t0 + Duration::from_millis(60), &mut late);
        assert_eq!(late.len(), 6);
        r.chain.inject(1, Fault::Truncate, t0);
        assert!(request(&mut r, 1, I::Read, &[56, 2], t0).is_empty());
        r.chain.inject(1, Fault::Overheat(Duration::from_millis(100)), t0);
        let p = request(&mut r, 1, I::Ping, &[], t0);
        assert_eq!(p[0].x, StatusFlags::OVERHEAT);
        let p = request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(150));
        assert_eq!(p[0].x, 0, "the overheat ends after its duration");
        r.chain.inject(1, Fault::Silence(Duration::from_millis(100)), t0 + Duration::from_millis(150));
        assert!(request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(200)).is_empty());
        assert_eq!(request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(260)).len(), 1);
        let kinds: Vec<_> = r.chain.fault_log().iter().map(|f| f.fault.kind()).collect();
        assert_eq!(kinds, ["drop", "corrupt", "delay", "truncate", "overheat", "silence"]);
    }
}
