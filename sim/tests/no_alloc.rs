//! `VecEnv::step` and camera rendering allocate nothing: a counting global allocator watches a
//! few hundred steps (crossing auto-resets) on the sequential path and on the rayon path. The one exception is
//! rayon's own job queue when `step` is called from outside a rayon pool (see below).

use embodia_sim::camera::{Cameras, RenderConfig};
use embodia_sim::classic::PARALLEL_THRESHOLD;
use embodia_sim::{VecEnv, make, tasks};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts allocations made on marked threads: the test thread and the workers of the test's
/// own pool. Other threads (libtest's, rayon's global pool winding down between phases) are
/// not watched.
struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if WATCHED.try_with(Cell::get).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
    }
}

fn watch_this_thread() {
    WATCHED.with(|w| w.set(true));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during_steps(env: &mut dyn VecEnv, steps: usize) -> usize {
    let n = env.num_envs() * env.action_spec().bounds.dim();
    let actions: Vec<f32> = (0..n).map(|k| ((k % 7) as f32 - 3.0) * 0.7).collect();
    // Warm-up: lets rayon start its pool and its threads' crossbeam-epoch state before counting.
    for _ in 0..100 {
        env.step(&actions).unwrap();
    }
    let before = ALLOCS.load(Ordering::SeqCst);
    for _ in 0..steps {
        env.step(&actions).unwrap();
    }
    ALLOCS.load(Ordering::SeqCst) - before
}

// One test function: the counter is global, and tests in one binary run in parallel.
#[test]
fn step_allocates_nothing() {
    // One pool for the whole test: a pool's threads allocate while they start and shut down
    // (crossbeam-epoch registration and garbage bags), concurrently with what is measured.
    watch_this_thread();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).start_handler(|_| watch_this_thread()).build().unwrap();
    // Let every worker start up (thread start and crossbeam-epoch registration allocate)
    // before anything is counted.
    pool.broadcast(|_| ());
    // Classic-control tasks only: rapier's multibody solver allocates work matrices inside
    // its step (nalgebra `DVector`s in `Multibody::update_acceleration` and friends), which
    // embodia cannot avoid without patching rapier.
    for t in tasks().iter().filter(|t| embodia_sim::task_config(t.name).is_none()) {
        // Sequential path.
        let mut env = make(t.name, 16).unwrap();
        let steps = t.max_episode_steps as usize + 50;
        assert_eq!(allocations_during_steps(env.as_mut(), steps), 0, "{} × 16", t.name);
        // Parallel path, called from inside a rayon pool (as a training loop running in
        // `pool.install` does): nothing at all.
        let n = 2 * PARALLEL_THRESHOLD;
        let mut env = make(t.name, n).unwrap();
        let count = pool.install(|| allocations_during_steps(env.as_mut(), steps));
        assert_eq!(count, 0, "{} × {n} inside the pool", t.name);
        // Parallel path, called from outside any pool: embodia allocates nothing, but rayon's
        // global injector queue (crossbeam) allocates one block per 63 jobs injected into the
        // pool, i.e. once per 63 calls of `step`.
        let count = allocations_during_steps(env.as_mut(), steps);
        assert!(count <= steps / 63 + 1, "{} × {n}: {count} allocations in {steps} steps", t.name);
    }
    // Cameras: drawing randomization and rendering every camera of a rapier batch (poses read
    // through its `SceneView`) allocate nothing either.
    let count = pool.install(|| {
        let env = make("pick-cube", 8).unwrap();
        let view = env.scene_view().unwrap();
        let mut config = RenderConfig::for_task(&embodia_sim::task_config("pick-cube").unwrap(), 48, 48);
        config.randomization.distractors = 3;
        config.randomization.random_object_colors = true;
        config.randomization.light_cone_deg = 20.0;
        let mut cameras = Cameras::new(&view.bodies(), config, 8).unwrap();
        cameras.reset(1);
        cameras.render(view).unwrap();
        let before = ALLOCS.load(Ordering::SeqCst);
        for _ in 0..20 {
            (0..8).for_each(|i| cameras.randomize(i));
            cameras.render(view).unwrap();
        }
        ALLOCS.load(Ordering::SeqCst) - before
    });
    assert_eq!(count, 0, "camera randomization and rendering");
}
