//! Parameter export/import and Polyak averaging.

use burn::nn::LinearConfig;
use burn::tensor::Device;
use burn::tensor::{Distribution, Tensor};
use embodia_policies::{
    Activation, ParamError, QEnsembleConfig, load_params, named_params, polyak_update, seeded_init, with_generator_lock,
};

fn critic_config(hidden: usize) -> QEnsembleConfig {
    QEnsembleConfig {
        obs_dim: 3,
        action_dim: 1,
        hidden: vec![hidden, hidden],
        activation: Activation::Relu,
        members: 2,
        layer_norm: false,
    }
}

#[test]
fn round_trip_and_errors_name_the_parameter() {
    let device = Device::flex();
    let a = seeded_init(&device, 1, |device| critic_config(8).init(device));
    let b = seeded_init(&device, 2, |device| critic_config(8).init(device));
    let pa = named_params(&a);
    assert_ne!(pa, named_params(&b), "different seeds give different parameters");
    assert_eq!(
        pa,
        named_params(&seeded_init(&device, 1, |device| critic_config(8).init(device))),
        "same seed, same parameters"
    );
    assert_eq!(pa["layers.0.weight"].0, vec![2, 4, 8], "{:?}", pa.keys().collect::<Vec<_>>());
    let loaded = load_params(b, &pa).unwrap();
    assert_eq!(named_params(&loaded), pa);

    let mut missing = pa.clone();
    missing.remove("layers.2.bias");
    let err = load_params(loaded.clone(), &missing).unwrap_err();
    assert_eq!(err, ParamError::Missing("layers.2.bias".into()));

    let wider = named_params(&seeded_init(&device, 5, |device| critic_config(16).init(device)));
    assert!(matches!(load_params(loaded.clone(), &wider).unwrap_err(), ParamError::Shape { .. }));

    let mut nan = pa.clone();
    nan.get_mut("layers.1.weight").unwrap().1[3] = f32::NAN;
    assert_eq!(load_params(loaded, &nan).unwrap_err(), ParamError::NonFinite("layers.1.weight".into()));
}

/// Loading into a freshly built module does not initialize its lazy parameters first: that would
/// draw from the backend's process-wide generator, which a `seeded_init` on another thread may
/// be drawing from at the same moment.
#[test]
fn loading_draws_nothing_from_the_generator() {
    let device = Device::flex();
    let params = named_params(&seeded_init(&device, 3, |device| LinearConfig::new(3, 4).init(device)));
    let draw = || Tensor::<1>::random([8], Distribution::Default, &device).into_data();
    let (direct, after_load) = with_generator_lock(|| {
        device.seed(7);
        let direct = draw();
        device.seed(7);
        let loaded = load_params(LinearConfig::new(3, 4).init(&device), &params).unwrap();
        assert_eq!(named_params(&loaded), params);
        (direct, draw())
    });
    assert_eq!(direct, after_load);
}

#[test]
fn polyak_mixes_each_parameter() {
    let device = Device::flex();
    // Every construction goes through seeded_init: its lock keeps this test's draws from
    // interleaving with the other test's seeded ones.
    let target = seeded_init(&device, 3, |device| critic_config(4).init(device));
    let online = seeded_init(&device, 4, |device| critic_config(4).init(device));
    let (pt, po) = (named_params(&target), named_params(&online));
    let mixed = named_params(&polyak_update(target, &online, 0.25));
    for (name, (_, m)) in &mixed {
        for ((m, t), o) in m.iter().zip(&pt[name].1).zip(&po[name].1) {
            assert!((m - (0.75 * t + 0.25 * o)).abs() < 1e-6, "{name}");
        }
    }
}
