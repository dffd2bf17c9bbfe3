// RLtools' pendulum SAC benchmark, built against the headers of its PyPI wheel, for
// bench/compare_solve.sh: the configuration of RLtools' own benchmark (SAC, batch 100, actor and
// critic of 3 layers of 64 units, 10,000 environment steps, the loop's defaults otherwise),
// timed here, with RLtools' own deterministic evaluation of 10 episodes every 1,000 steps.
// Output, one line: `rltools seed=S steps=N train_s=X first_solved_step=K final_return=R`
// (first_solved_step: the first evaluation with mean return >= -200; -1 if none).
// Build: g++ -std=c++17 -O3 -Ofast -march=native -DRL_TOOLS_BACKEND_ENABLE_OPENBLAS
//        -I"$RLTOOLS_INCLUDE" pendulum_sac.cpp -lopenblas
#include <rl_tools/operations/cpu_mux.h>
#include <rl_tools/rl/environments/pendulum/operations_cpu.h>
// The order matters (as in RLtools' own training.cpp): the optimizer's instance operations
// before the layers'.
#include <rl_tools/nn/optimizers/adam/instance/operations_generic.h>
#include <rl_tools/nn/operations_cpu_mux.h>
#include <rl_tools/nn/layers/sample_and_squash/operations_generic.h>
#include <rl_tools/nn/layers/standardize/operations_generic.h>
#include <rl_tools/nn/layers/td3_sampling/operations_generic.h>
#include <rl_tools/nn/layers/gru/operations_generic.h>
#include <rl_tools/nn_models/mlp_unconditional_stddev/operations_generic.h>
#include <rl_tools/nn_models/mlp/operations_generic.h>
#include <rl_tools/nn_models/sequential/operations_generic.h>
#include <rl_tools/nn/optimizers/adam/operations_generic.h>
#include <rl_tools/rl/algorithms/sac/loop/core/config.h>
#include <rl_tools/rl/loop/steps/evaluation/config.h>
#include <rl_tools/rl/algorithms/sac/loop/core/operations_generic.h>
#include <rl_tools/rl/loop/steps/evaluation/operations_generic.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace rlt = rl_tools;

using DEVICE = rlt::devices::DEVICE_FACTORY<>;
using RNG = DEVICE::SPEC::RANDOM::ENGINE<>;
using T = float;
using TI = typename DEVICE::index_t;
using TYPE_POLICY = rlt::numeric_types::Policy<T>;
using PENDULUM_SPEC = rlt::rl::environments::pendulum::Specification<T, TI>;
using ENVIRONMENT = rlt::rl::environments::Pendulum<PENDULUM_SPEC>;

struct LOOP_CORE_PARAMETERS: rlt::rl::algorithms::sac::loop::core::DefaultParameters<TYPE_POLICY, TI, ENVIRONMENT> {
    struct SAC_PARAMETERS: rlt::rl::algorithms::sac::DefaultParameters<TYPE_POLICY, TI, ENVIRONMENT::ACTION_DIM> {
        static constexpr TI ACTOR_BATCH_SIZE = 100;
        static constexpr TI CRITIC_BATCH_SIZE = 100;
    };
    static constexpr TI STEP_LIMIT = 10000;
    static constexpr TI REPLAY_BUFFER_CAP = STEP_LIMIT;
    static constexpr TI N_WARMUP_STEPS = 100;
};
using LOOP_CORE_CONFIG = rlt::rl::algorithms::sac::loop::core::Config<TYPE_POLICY, TI, RNG, ENVIRONMENT, LOOP_CORE_PARAMETERS>;
using EVAL_PARAMETERS = rlt::rl::loop::steps::evaluation::Parameters<TYPE_POLICY, TI, LOOP_CORE_CONFIG, 10, 1000>;
using LOOP_CONFIG = rlt::rl::loop::steps::evaluation::Config<LOOP_CORE_CONFIG, EVAL_PARAMETERS>;
using LOOP_STATE = typename LOOP_CONFIG::template State<LOOP_CONFIG>;

int main(int argc, char** argv) {
    TI seed = argc > 1 ? std::atoi(argv[1]) : 0;
    DEVICE device;
    LOOP_STATE ts;
    rlt::malloc(device);
    rlt::init(device);
    rlt::malloc(device, ts);
    rlt::init(device, ts, seed);
    auto start = std::chrono::steady_clock::now();
    while (!rlt::step(device, ts)) {
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long first_solved = -1;
    T last = 0;
    for (TI i = 0; i < EVAL_PARAMETERS::N_EVALUATIONS; i++) {
        T mean = rlt::get(ts.evaluation_results, 0, i).returns_mean;
        last = mean;
        if (first_solved < 0 && mean >= -200) {
            first_solved = (long)(i * EVAL_PARAMETERS::EVALUATION_INTERVAL);
        }
    }
    std::printf("rltools seed=%ld steps=%ld train_s=%.3f first_solved_step=%ld final_return=%.1f\n", (long)seed,
                (long)LOOP_CORE_PARAMETERS::STEP_LIMIT, seconds, first_solved, (double)last);
    rlt::free(device, ts);
    return 0;
}
