"""The face denoiser and its training loop, on tiny generated images."""

import pytest
import json
from dataclasses import replace

import numpy as np
import torch

from recourse.generation.denoiser_training import DenoiserTrainConfig, denoising_psnr, train_denoiser
from recourse.generation.face_denoiser import FaceDenoiser, edm_scalings, psnr
from recourse.generation.generators import FACE_DENOISER_WEIGHTS, load_face_denoiser, save_face_denoiser
from safetensors.torch import load_file

TINY = DenoiserTrainConfig(block_out_channels=(32, 32, 32), attention_levels=(False, False, False),
                           batch_size=4, steps=4, eval_every=2, warmup_steps=2)


def images(n: int = 12, size: int = 32) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, 3, size, size), dtype=np.uint8)


def test_edm_scalings_keep_the_input_and_target_at_unit_scale():
    sigma = torch.tensor([0.02, 0.3, 1.0])
    c_skip, c_out, c_in = edm_scalings(sigma)
    assert torch.allclose(c_in, 1 / (sigma ** 2 + 0.25).sqrt())
    # at low noise the denoiser passes the input through; at high noise it predicts
    assert c_skip[0] > 0.99 and c_skip[2] < 0.25
    # the skip and the network share the signal: c_skip + c_out² / σ_data² = 1
    assert torch.allclose(c_skip + c_out ** 2 / 0.25, torch.ones(3))


def test_psnr_of_an_exact_estimate_is_large_and_of_noise_is_small():
    x = torch.rand(2, 3, 8, 8)
    assert (psnr(x, x) > 100).all()
    assert (psnr(torch.zeros_like(x), torch.ones_like(x)) == 0).all()


@pytest.mark.slow
def test_training_writes_ema_weights_a_curve_and_resumes(tmp_path):
    state = tmp_path / "state"
    ema = train_denoiser(images(), images(4), state, TINY, metadata={"training_command": "test"})
    curve = [json.loads(line) for line in (state / "curve.jsonl").read_text().splitlines()]
    assert [r["step"] for r in curve] == [2, 4]
    assert {"psnr_0.1", "psnr_0.3", "psnr_0.5"} <= set(curve[0])
    record = json.loads((ema / "training.json").read_text())
    assert record["step"] == 4 and record["training_command"] == "test"
    first = load_face_denoiser(ema)
    # resuming continues from step 4 to 6, it does not start again
    train_denoiser(images(), images(4), state, replace(TINY, steps=6))
    curve = [json.loads(line) for line in (state / "curve.jsonl").read_text().splitlines()]
    assert [r["step"] for r in curve] == [2, 4, 6]
    resumed = load_face_denoiser(ema)
    assert not torch.equal(first.unet.conv_in.weight, resumed.unet.conv_in.weight)


def test_a_stop_request_saves_the_step_it_came_at(tmp_path):
    asked = []
    ema = train_denoiser(images(), images(4), tmp_path, replace(TINY, steps=100),
                         should_stop=lambda: asked.append(True) or len(asked) >= 3)
    assert json.loads((ema / "training.json").read_text())["step"] == 3  # saved at once, not 100 steps later
    train_denoiser(images(), images(4), tmp_path, replace(TINY, steps=5))  # and resumes from there
    assert json.loads((ema / "training.json").read_text())["step"] == 5


@pytest.mark.slow
def test_a_run_can_start_from_saved_weights(tmp_path):
    ema = train_denoiser(images(), images(4), tmp_path / "a", TINY)
    saved = load_face_denoiser(ema)
    train_denoiser(images(), images(4), tmp_path / "b", replace(TINY, steps=1, learning_rate=0.0), init_from=ema)
    again = load_face_denoiser(tmp_path / "b" / "ema")
    assert torch.allclose(saved.unet.conv_in.weight, again.unet.conv_in.weight)


def test_eight_bit_weights_load_as_float_and_denoise(tmp_path):
    model = FaceDenoiser(resolution=32, block_out_channels=(32, 32, 32), attention_levels=(False, False, False))
    save_face_denoiser(model, tmp_path / "d")
    stored = load_file(str(tmp_path / "d" / FACE_DENOISER_WEIGHTS))
    assert stored["unet.conv_in.weight"].dtype == torch.int8
    loaded = load_face_denoiser(tmp_path / "d")
    assert loaded.unet.conv_in.weight.dtype == torch.float32
    # one 8-bit step per output channel at most: the codes are the nearest ones
    scale = stored["unet.conv_in.weight.int8_scale"].view(-1, 1, 1, 1)
    assert ((loaded.unet.conv_in.weight - model.unet.conv_in.weight).abs() <= scale / 2 + 1e-7).all()
    x = torch.rand(2, 3, 32, 32)
    assert torch.allclose(loaded(x, 0.3), model(x, 0.3), atol=2e-2)
    assert 0 < denoising_psnr(loaded, x, 0.3) < 100


def test_a_state_folder_pins_its_configuration_and_refuses_another(tmp_path):
    from recourse.generation.denoiser_training import pinned_config

    small = replace(TINY, fold=2)
    train_denoiser(images(), images(4), tmp_path, small)
    assert pinned_config(tmp_path, DenoiserTrainConfig(), {}) == small  # a bare resume trains the same network
    assert pinned_config(tmp_path, DenoiserTrainConfig(), {"steps": 9}) == replace(small, steps=9)
    try:
        pinned_config(tmp_path, DenoiserTrainConfig(fold=4), {"fold": 4})
    except ValueError as error:
        assert "fold 4" in str(error) and "uses 2" in str(error)
    else:
        raise AssertionError("another fold was accepted for a pinned run")


def test_a_configuration_whose_levels_disagree_is_refused():
    for bad in (dict(attention_levels=(False,)), dict(fold=3), dict(sigma_max=0.01)):
        try:
            DenoiserTrainConfig(**bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was accepted")
