//! Overhead of running task terms as bevy_ecs systems: one `World` and `Schedule` per
//! environment (single-threaded executor, so rayon keeps the parallelism over environments),
//! eight systems shaped like ant-run's terms (three observation terms, three reward terms, a
//! reward reset, a termination), run once per environment step, against the same arithmetic as
//! plain calls. Prints microseconds per environment step for both.
use bevy_ecs::prelude::*;
use std::time::Instant;

#[derive(Resource, Default)]
struct State { q: [f32; 16], qd: [f32; 16], base: [f32; 13] }
#[derive(Resource, Default)]
struct Obs(Vec<f32>);
#[derive(Resource, Default)]
struct Reward(f32);
#[derive(Resource, Default)]
struct Done(bool);

fn obs_joint_pos(s: Res<State>, mut o: ResMut<Obs>) { o.0[..16].copy_from_slice(&s.q); }
fn obs_joint_vel(s: Res<State>, mut o: ResMut<Obs>) { for i in 0..16 { o.0[16 + i] = 0.1 * s.qd[i]; } }
fn obs_base(s: Res<State>, mut o: ResMut<Obs>) { o.0[32..45].copy_from_slice(&s.base); }
fn rew_alive(mut r: ResMut<Reward>) { r.0 += 1.0; }
fn rew_forward(s: Res<State>, mut r: ResMut<Reward>) { r.0 += s.base[7]; }
fn rew_ctrl(s: Res<State>, mut r: ResMut<Reward>) { r.0 -= 0.5 * s.qd.iter().map(|x| x * x).sum::<f32>() * 1e-3; }
fn rew_reset(mut r: ResMut<Reward>) { r.0 = 0.0; }
fn term_height(s: Res<State>, mut d: ResMut<Done>) { d.0 = s.base[2] < 0.2 || s.base[2] > 1.0; }

fn main() {
    let n = 64;
    let steps = 20000;
    let mut worlds: Vec<(World, Schedule)> = (0..n).map(|_| {
        let mut w = World::new();
        w.insert_resource(State::default());
        w.insert_resource(Obs(vec![0.0; 45]));
        w.insert_resource(Reward::default());
        w.insert_resource(Done::default());
        let mut s = Schedule::default();
        s.add_systems((rew_reset, (rew_alive, rew_forward, rew_ctrl), obs_joint_pos, obs_joint_vel, obs_base, term_height).chain());
        s.run(&mut w);
        (w, s)
    }).collect();
    let t = Instant::now();
    let mut acc = 0.0f32;
    for k in 0..steps {
        for (w, s) in worlds.iter_mut() {
            w.resource_mut::<State>().base[2] = 0.5 + (k % 7) as f32 * 0.01;
            s.run(w);
            acc += w.resource::<Reward>().0;
        }
    }
    let per = t.elapsed().as_secs_f64() / (steps * n) as f64 * 1e6;
    // The same terms as plain function calls.
    let mut st = State::default(); let mut o = vec![0.0f32; 45]; let mut acc2 = 0.0f32;
    let t = Instant::now();
    for k in 0..steps * n {
        st.base[2] = 0.5 + (k % 7) as f32 * 0.01;
        let mut r = 1.0 + st.base[7] - 0.5 * st.qd.iter().map(|x| x * x).sum::<f32>() * 1e-3;
        o[..16].copy_from_slice(&st.q); for i in 0..16 { o[16 + i] = 0.1 * st.qd[i]; } o[32..45].copy_from_slice(&st.base);
        let d = st.base[2] < 0.2 || st.base[2] > 1.0; if d { r += 1.0; }
        acc2 += r + o[40];
        std::hint::black_box(&o);
    }
    let per2 = t.elapsed().as_secs_f64() / (steps * n) as f64 * 1e6;
    println!("bevy_ecs 0.20.1, 8 term systems per env step, single-threaded schedule: {per:.3} us per env step; plain calls {per2:.4} us ({acc} {acc2})");
}
