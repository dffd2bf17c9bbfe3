//! The small VLA: tokenizer, shapes, parameter counts, checkpoints, name-mapped loading,
//! stored-chain log-probabilities, input validation.

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::vla::{
    BOS_TOKEN, ByteTokenizer, EOS_TOKEN, PAD_TOKEN, TokenizerError, ValueInput, VisionConfig, VisionStem, VlaConfig,
    VlaError, VlaInput, VlaModel, spatial_softmax,
};
use embodia_policies::{
    NameMap, NoiseMethod, StochasticSteps, TensorFileError, named_params, seeded_init, write_safetensors,
};

fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// A small layout for fast tests: 32×32 images, patch 8 (16 tokens per view).
fn test_config() -> VlaConfig {
    VlaConfig::tiny(5, 3)
        .with_vision(VisionConfig::new().with_image_size(32).with_width(32).with_depth(1).with_heads(2))
        .with_backbone_width(48)
        .with_expert_width(32)
        .with_expert_depth(1)
        .with_horizon(4)
        .with_chunk(2)
}

fn model(config: &VlaConfig, seed: u64) -> (VlaModel, Device) {
    let device = Device::flex();
    let m = seeded_init(&device, seed, |device| config.init(device).unwrap());
    (m, device)
}

fn input(model: &VlaModel, batch: usize, views: usize, instructions: &[&str]) -> VlaInput {
    let s = model.config().vision.image_size;
    let images = (0..batch * views * s * s * 3).map(|i| ((i * 37 + i / 7) % 256) as u8).collect();
    let proprio = (0..batch * model.config().proprio_dim).map(|i| (i as f32 * 0.3).sin()).collect();
    VlaInput::new(&model.tokenizer(), batch, views, s, s, images, instructions, proprio).unwrap()
}

fn noise(k1: usize, batch: usize, width: usize, device: &Device) -> Tensor<3> {
    let n = k1 * batch * width;
    Tensor::from_data(
        TensorData::new(
            (0..n).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 3.0).collect::<Vec<_>>(),
            [k1, batch, width],
        ),
        device,
    )
}

#[test]
fn tokenizer_round_trips_and_pads() {
    let tok = ByteTokenizer::new(24).unwrap();
    for text in ["pick up the red cube", "", "grüne Würfel →", "a\u{0}b"] {
        let (ids, mask) = tok.encode(text).unwrap();
        assert_eq!(ids.len(), 24);
        assert_eq!(ids[0], BOS_TOKEN);
        let real = text.len() + 2;
        assert_eq!(ids[real - 1], EOS_TOKEN);
        assert!(ids[real..].iter().all(|&id| id == PAD_TOKEN), "{ids:?}");
        assert_eq!(mask.iter().filter(|&&m| m).count(), real);
        assert!(mask[..real].iter().all(|&m| m) && mask[real..].iter().all(|&m| !m));
        assert_eq!(tok.decode(&ids), text);
    }
    let batch = tok.encode_batch(&["left", "push the blue block"]).unwrap();
    assert_eq!((batch.batch, batch.len, batch.ids.len(), batch.mask.len()), (2, 24, 48, 48));
    assert_eq!(tok.decode(&batch.ids[24..]), "push the blue block");
    let tok = ByteTokenizer::new(16).unwrap();
    // 15 bytes do not fit in 16 tokens (BOS + EOS); the error names the text.
    let err = tok.encode_batch(&["ok", "fifteen bytes!!"]).unwrap_err();
    assert_eq!(err, TokenizerError::TooLong { index: 1, bytes: 15, max: 14, max_len: 16 });
    let (ids, _) = tok.encode_truncated("fifteen bytes!!");
    assert_eq!(tok.decode(&ids), "fifteen bytes!");
    assert!(ByteTokenizer::new(1).is_err());
}

#[test]
fn output_shapes_for_one_and_two_views_and_both_stems() {
    for stem in [VisionStem::Patch, VisionStem::Cnn] {
        let mut config = test_config();
        config.vision.stem = stem;
        let (m, device) = model(&config, 1);
        for views in [1, 2] {
            let batch = m.prepare(&input(&m, 2, views, &["pick red", "push blue left"]), &device).unwrap();
            let ctx = m.encode(&batch);
            let p = views * 16 + 32 + 1;
            assert_eq!(ctx.cache.layers.len(), 1);
            assert_eq!(ctx.cache.layers[0].0.dims(), [2, 4, p, 8], "{stem:?} views {views}");
            assert_eq!(ctx.cache.padding.dims(), [2, p]);
            assert_eq!(ctx.pooled.dims(), [2, 48]);
            let actions = m.predict(&batch, Tensor::zeros([2, 4, 3], &device));
            assert_eq!(actions.dims(), [2, 4, 3]);
            assert!(host(actions).iter().all(|v| v.is_finite()));
            let sample = m.sample(&ctx, noise(5, 2, 12, &device), NoiseMethod::Noise, StochasticSteps::Joint);
            assert_eq!(sample.actions.dims(), [2, 12]);
            assert_eq!(m.unflatten(sample.actions).dims(), [2, 4, 3]);
            assert_eq!(sample.chains.dims(), [5, 2, 12]);
            assert_eq!(sample.log_prob.dims(), [2, 6]);
            assert_eq!(sample.value.dims(), [2, 1]);
            assert_eq!(m.value(&ctx).dims(), [2, 1]);
            assert!(m.grounding(&ctx).is_none(), "no grounding head without grounding_dim");
        }
    }
    // The grounding head reads the proprioception token: `[B, grounding_dim]`.
    let (m, device) = model(&test_config().with_grounding_dim(5), 1);
    let batch = m.prepare(&input(&m, 2, 1, &["pick red", "push blue left"]), &device).unwrap();
    let ctx = m.encode(&batch);
    assert_eq!(ctx.proprio_token.dims(), [2, 48]);
    let g = m.grounding(&ctx).expect("grounding head");
    assert_eq!(g.dims(), [2, 5]);
    assert!(host(g).iter().all(|v| v.is_finite()));
    // Fed to the expert, the prediction changes the actions.
    let (fed, _) = model(&test_config().with_grounding_dim(5).with_grounding_to_expert(true), 1);
    let z = Tensor::zeros([2, 4, 3], &device);
    let a = host(fed.predict(&batch, z.clone()));
    let mut ctx = fed.encode(&batch);
    ctx.grounding = ctx.grounding.map(|g| g.add_scalar(1.0));
    let b = host(fed.velocity(&ctx, z.clone(), Tensor::ones([2, 1], &device)));
    let c = host(fed.velocity(&fed.encode(&batch), z, Tensor::ones([2, 1], &device)));
    assert_eq!(a.len(), 24);
    assert!(b.iter().zip(&c).any(|(x, y)| (x - y).abs() > 1e-4), "the expert ignores the grounding");
}

#[test]
fn language_padding_is_masked_out() {
    let (m, device) = model(&test_config(), 2);
    let a = input(&m, 2, 1, &["left", "right"]);
    let mut b = a.clone();
    // Change the ids under padding: nothing may change.
    for (id, &real) in b.tokens.iter_mut().zip(&a.token_mask) {
        if !real {
            *id = b'x' as u32;
        }
    }
    let z = Tensor::zeros([2, 4, 3], &device);
    let pa = host(m.predict(&m.prepare(&a, &device).unwrap(), z.clone()));
    let pb = host(m.predict(&m.prepare(&b, &device).unwrap(), z.clone()));
    for (x, y) in pa.iter().zip(&pb) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
    // The instruction itself does matter.
    let c = input(&m, 2, 1, &["right", "left"]);
    let pc = host(m.predict(&m.prepare(&c, &device).unwrap(), z));
    assert!(pa.iter().zip(&pc).any(|(x, y)| (x - y).abs() > 1e-4));
}

#[test]
fn the_pooled_instruction_averages_only_the_valid_instruction_tokens() {
    let (m, device) = model(&test_config(), 2);
    let pools = |input: &VlaInput| {
        let context = m.encode(&m.prepare(input, &device).unwrap());
        (host(context.pooled), host(context.pooled_instruction))
    };
    let mut a = input(&m, 2, 1, &["push it to the left", "push it to the right"]);
    // The same scene in both rows: only the instruction differs.
    let (half, proprio) = (a.images.len() / 2, a.proprio.len() / 2);
    a.images.copy_within(..half, half);
    a.proprio.copy_within(..proprio, proprio);
    let mut padded_x = a.clone();
    for (id, &real) in padded_x.tokens.iter_mut().zip(&a.token_mask) {
        if !real {
            *id = b'x' as u32;
        }
    }
    let (pooled, instruction) = pools(&a);
    assert_eq!(instruction.len(), 2 * m.config().backbone_width);
    // Padded positions still have outputs (they attend to the valid tokens); the pool must
    // leave them out.
    let (_, instruction_x) = pools(&padded_x);
    for (x, y) in instruction.iter().zip(&instruction_x) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
    // One word apart, the instruction pool moves more than the whole prefix's pool, where the
    // image tokens dilute the words.
    let distance = |p: &[f32], q: &[f32]| p.iter().zip(q).map(|(x, y)| (x - y).powi(2)).sum::<f32>().sqrt();
    let w = m.config().backbone_width;
    let moved_instruction = distance(&instruction[..w], &instruction[w..]);
    let moved_pooled = distance(&pooled[..w], &pooled[w..]);
    assert!(moved_instruction > 1.2 * moved_pooled, "{moved_instruction} vs {moved_pooled}");
}

#[test]
fn preset_parameter_counts() {
    let tiny = VlaConfig::tiny(7, 7);
    let small = VlaConfig::small(7, 7);
    let base = VlaConfig::base(7, 7);
    let (t, s, b) = (tiny.param_count(), small.param_count(), base.param_count());
    assert!((800_000..1_500_000).contains(&t), "tiny {t}");
    assert!((9_000_000..14_000_000).contains(&s), "small {s}");
    assert!((80_000_000..130_000_000).contains(&b), "base {b}");
    // The analytic count is the built model's (base is too large to build in a test).
    let mut cnn = test_config();
    cnn.vision.stem = VisionStem::Cnn;
    cnn.value_input = ValueInput::Expert;
    let grounded = test_config().with_grounding_dim(9).with_grounding_to_expert(true);
    for config in [tiny, small, test_config(), cnn, grounded] {
        let (m, _) = model(&config, 3);
        assert_eq!(m.num_params(), config.param_count(), "{config:?}");
    }
}

#[test]
fn film_conditions_the_image_tokens_on_the_instruction_and_keypoints_add_one_token_per_view() {
    let film = |keypoints: usize| {
        let mut config = test_config();
        config.vision.stem = VisionStem::Cnn;
        config.vision.film = true;
        config.vision.keypoints = keypoints;
        config
    };
    for config in [film(0), film(6)] {
        let (m, device) = model(&config, 2);
        assert_eq!(m.num_params(), config.param_count(), "{config:?}");
        let per_view = 16 + usize::from(config.vision.keypoints > 0);
        assert_eq!(config.vision.tokens_per_view(), per_view);
        // The same images under two instructions: FiLM makes the image tokens differ.
        let batch = m.prepare(&input(&m, 2, 2, &["pick up the red cube", "pick up the blue cube"]), &device).unwrap();
        let mut same_images = batch.clone();
        same_images.images = batch.images.clone().narrow(0, 0, 1).repeat_dim(0, 2);
        let ctx = m.encode(&same_images);
        assert_eq!(ctx.cache.layers[0].0.dims()[2], 2 * per_view + 32 + 1);
        let keys = host(ctx.cache.layers[0].0.clone().narrow(2, 0, 2 * per_view));
        let (red, blue) = keys.split_at(keys.len() / 2);
        let diff = red.iter().zip(blue).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff > 1e-4, "image tokens do not depend on the instruction: {diff}");
    }
    // Both need the CNN stem; the error names the field.
    assert_eq!(
        test_config().with_vision(film(0).vision.with_stem(VisionStem::Patch)).validate().unwrap_err().field,
        "vision.film"
    );
    let mut patch_keypoints = test_config();
    patch_keypoints.vision.keypoints = 4;
    assert_eq!(patch_keypoints.validate().unwrap_err().field, "vision.keypoints");
}

#[test]
fn spatial_softmax_gives_the_expected_coordinates_of_each_channel() {
    let device = Device::flex();
    // Channel 0 peaks at row 1, column 3 of a 4×5 map; channel 1 is uniform.
    let mut logits = vec![0.0f32; 2 * 4 * 5];
    logits[5 + 3] = 50.0;
    let out = host(spatial_softmax(Tensor::from_data(TensorData::new(logits, [1, 2, 4, 5]), &device)));
    let expected = [2.0 * 3.0 / 4.0 - 1.0, 2.0 * 1.0 / 3.0 - 1.0, 0.0, 0.0];
    for (got, want) in out.iter().zip(expected) {
        assert!((got - want).abs() < 1e-4, "{out:?} vs {expected:?}");
    }
}

#[test]
fn checkpoint_round_trip_gives_identical_outputs() {
    let config = test_config();
    let (m, device) = model(&config, 4);
    let dir = std::env::temp_dir().join(format!("embodia-vla-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vla.safetensors");
    m.save(&path).unwrap();
    let loaded = VlaModel::load(&path, &device).unwrap();
    assert_eq!(loaded.config(), &config);
    // Into a differently initialized model of the same layout.
    let (other, _) = model(&config, 5);
    let other = other.load_weights(&path).unwrap();
    let batch = m.prepare(&input(&m, 2, 2, &["stack", "pick"]), &device).unwrap();
    let n = noise(5, 2, 12, &device);
    let reference = m.sample(&m.encode(&batch), n.clone(), NoiseMethod::Noise, StochasticSteps::Joint);
    for restored in [&loaded, &other] {
        let s = restored.sample(&restored.encode(&batch), n.clone(), NoiseMethod::Noise, StochasticSteps::Joint);
        assert_eq!(host(s.actions), host(reference.actions.clone()));
        assert_eq!(host(s.log_prob), host(reference.log_prob.clone()));
        assert_eq!(host(s.value), host(reference.value.clone()));
    }
    // A checkpoint whose tokenizer this build does not ship is refused.
    let (tensors, mut meta) = embodia_policies::read_safetensors(&path).unwrap();
    meta.insert("embodia.vla.tokenizer".into(), "sentencepiece-x".into());
    let foreign = dir.join("foreign.safetensors");
    write_safetensors(&foreign, &tensors, &meta).unwrap();
    let err = VlaModel::load(&foreign, &device).unwrap_err().to_string();
    assert!(err.contains("sentencepiece-x"), "{err}");
    // A checkpoint of another layout is refused with the tensor's name and shapes.
    let (wider, _) = model(&config.clone().with_backbone_width(64), 6);
    let err = wider.load_weights(&path).unwrap_err().to_string();
    assert!(err.contains("has shape") && err.contains("expects"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pretrained_encoder_weights_load_through_a_name_map() {
    let config = test_config();
    let (donor, device) = model(&config, 7);
    let dir = std::env::temp_dir().join(format!("embodia-vla-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An "image encoder" file: the donor's vision tower under `encoder.`, plus a classifier
    // head the map does not select.
    let mut file = embodia_policies::NamedParams::new();
    for (name, value) in named_params(&donor) {
        if let Some(rest) = name.strip_prefix("vision.") {
            file.insert(format!("encoder.{rest}"), value);
        }
    }
    file.insert("classifier.weight".into(), (vec![2, 2], vec![0.0; 4]));
    let path = dir.join("encoder.safetensors");
    write_safetensors(&path, &file, &Default::default()).unwrap();

    let (m, _) = model(&config, 8);
    let before = named_params(&m);
    let map = NameMap::new().rule("encoder.", "vision.");
    let (m, loaded) = m.load_pretrained(&path, &map).unwrap();
    assert_eq!(loaded, file.len() - 1);
    let after = named_params(&m);
    let donor_params = named_params(&donor);
    for (name, value) in &after {
        if name.starts_with("vision.") {
            assert_eq!(value, &donor_params[name], "{name} not loaded");
        } else {
            assert_eq!(value, &before[name], "{name} changed");
        }
    }
    // The loaded tower computes what the donor's does.
    let batch = m.prepare(&input(&m, 1, 2, &["x"]), &device).unwrap();
    assert_eq!(host(m.vision().forward(batch.images.clone(), None)), host(donor.vision().forward(batch.images, None)));

    // A shape mismatch names the file's tensor, the parameter and both shapes.
    let mut bad = file.clone();
    bad.insert("encoder.patch_embed.weight".into(), (vec![192, 16], vec![0.1; 192 * 16]));
    write_safetensors(&path, &bad, &Default::default()).unwrap();
    let (m2, _) = model(&config, 9);
    let err = m2.load_pretrained(&path, &map).unwrap_err();
    assert_eq!(
        err,
        VlaError::TensorFile(TensorFileError::Shape {
            file_name: "encoder.patch_embed.weight".into(),
            model_name: "vision.patch_embed.weight".into(),
            found: vec![192, 16],
            expected: vec![192, 32],
        })
    );
    assert!(err.to_string().contains("`encoder.patch_embed.weight`"), "{err}");
    // A missing tensor is named under both names.
    let mut missing = file.clone();
    missing.remove("encoder.norm.gamma");
    write_safetensors(&path, &missing, &Default::default()).unwrap();
    let (m3, _) = model(&config, 9);
    let err = m3.load_pretrained(&path, &map).unwrap_err().to_string();
    assert!(err.contains("`vision.norm.gamma`") && err.contains("`encoder.norm.gamma`"), "{err}");
    // A map pointing at a parameter the model lacks is refused.
    let (m4, _) = model(&config, 9);
    let err = m4.load_pretrained(&path, &NameMap::new().rule("classifier.", "head.")).unwrap_err().to_string();
    assert!(err.contains("`classifier.weight`") && err.contains("`head.weight`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stored_chain_log_probs_equal_the_rollout_ones() {
    for value_input in [ValueInput::Prefix, ValueInput::Expert] {
        let config = test_config().with_value_input(value_input);
        let (m, device) = model(&config, 10);
        let batch = m.prepare(&input(&m, 3, 2, &["a", "bb", "ccc"]), &device).unwrap();
        let ctx = m.encode(&batch);
        for (method, steps) in [
            (NoiseMethod::Noise, StochasticSteps::Joint),
            (NoiseMethod::Sde { level: 0.5 }, StochasticSteps::One(1)),
            (NoiseMethod::Cps { level: 0.5 }, StochasticSteps::One(2)),
        ] {
            let sample = m.sample(&ctx, noise(5, 3, 12, &device), method, steps);
            // Recomputed from a fresh prefix of the same observation, as PPO does.
            let eval = m.evaluate_chain(&m.encode(&batch), sample.chains.clone(), method, steps, true);
            let lp = host(sample.log_prob.clone());
            assert!(lp.iter().all(|v| v.is_finite() && *v != 0.0), "{lp:?}");
            let ratio = host((eval.log_prob - sample.log_prob).exp());
            assert!(ratio.iter().all(|&r| (r - 1.0).abs() < 1e-5), "{value_input:?} {method:?}: {ratio:?}");
            if value_input == ValueInput::Prefix {
                let (v, e) = (host(sample.value), host(eval.value.expect("asked for")));
                assert_eq!(v, e);
            }
            assert_eq!(host(sample.chains.narrow(0, 4, 1).reshape([3, 12])), host(sample.actions));
        }
    }
}

#[test]
fn bad_inputs_and_configs_name_the_field() {
    let (m, device) = model(&test_config(), 11);
    let good = input(&m, 2, 1, &["a", "b"]);
    let field = |i: &VlaInput| match m.prepare(i, &device) {
        Err(VlaError::Input { field, .. }) => field,
        other => panic!("expected an input error, got {other:?}"),
    };
    let mut i = good.clone();
    i.images.pop();
    assert_eq!(field(&i), "images");
    let mut i = good.clone();
    i.views = 3;
    assert_eq!(field(&i), "views");
    let mut i = good.clone();
    i.height = 64;
    assert_eq!(field(&i), "height");
    let mut i = good.clone();
    i.tokens[3] = 9999;
    assert_eq!(field(&i), "tokens");
    let mut i = good.clone();
    i.token_mask.pop();
    assert_eq!(field(&i), "token_mask");
    let mut i = good.clone();
    i.proprio[0] = f32::NAN;
    assert_eq!(field(&i), "proprio");
    let err = VlaInput::new(&m.tokenizer(), 2, 1, 32, 32, good.images.clone(), &["only one"], good.proprio.clone());
    assert!(matches!(err, Err(VlaError::Input { field: "instructions", .. })));

    let bad = test_config().with_chunk(9);
    assert_eq!(bad.validate().unwrap_err().field, "chunk");
    let mut bad = test_config();
    bad.vision.patch_size = 5;
    assert_eq!(bad.validate().unwrap_err().field, "vision.image_size");
    let bad = test_config().with_backbone_heads(5);
    assert_eq!(bad.validate().unwrap_err().field, "backbone_width");
    let mut deep = test_config();
    deep.text.depth = 0;
    assert_eq!(deep.validate().unwrap_err().field, "text.depth");
    let unfed = test_config().with_grounding_to_expert(true);
    assert_eq!(unfed.validate().unwrap_err().field, "grounding_to_expert");
    assert!(matches!(bad.init(&device), Err(VlaError::Config(_))));
}

#[test]
fn value_head_gradients_stop_at_its_input_when_detached() {
    use burn::optim::GradientsParams;
    for (value_input, detach) in [
        (ValueInput::Prefix, true),
        (ValueInput::Prefix, false),
        (ValueInput::Expert, true),
        (ValueInput::Expert, false),
    ] {
        let config = test_config().with_value_input(value_input).with_detach_critic_input(detach);
        let device = Device::flex().autodiff();
        let m = seeded_init(&device, 12, |device| config.init(device).unwrap());
        let batch = m.prepare(&input(&m, 2, 1, &["a", "b"]), &device).unwrap();
        let ctx = m.encode(&batch);
        let sample = m.sample(&ctx, noise(5, 2, 12, &device), NoiseMethod::Sde { level: 0.5 }, StochasticSteps::One(1));
        let grads = GradientsParams::from_grads(sample.value.sum().backward(), &m);
        // The value head has 3 layers × (weight, bias).
        if detach {
            assert_eq!(grads.len(), 6, "{value_input:?}: only the value head may get gradients");
        } else {
            assert!(grads.len() > 20, "{value_input:?}: {} parameters with gradients", grads.len());
        }
    }
}
