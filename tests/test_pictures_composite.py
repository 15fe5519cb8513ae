import torch

from recourse.data import resize_images
from recourse.render.pictures import composite


def _photo():
    generator = torch.Generator().manual_seed(0)
    display = torch.rand(3, 256, 256, generator=generator) * 0.2 + 0.4  # nothing clamped
    return display, resize_images(display[None], 64)[0]


def test_no_change_shows_the_photo_itself():
    display, x = _photo()
    for removing in (False, True):
        assert torch.allclose(composite(display, x, x, 256, removing), display, atol=1e-6)


def test_an_added_change_keeps_the_photo_detail_and_a_removal_lets_it_go():
    display, x = _photo()
    edited = x.clone()
    edited[:, 20:40, 20:40] = 0.8  # a large change: what the photo drew there is gone
    detail = (display - resize_images(x[None], 256)[0])[:, 100:140, 100:140]
    kept = composite(display, x, edited, 256)[:, 100:140, 100:140] - 0.8
    gone = composite(display, x, edited, 256, removing=True)[:, 100:140, 100:140] - 0.8
    assert torch.allclose(kept, detail, atol=1e-5)  # the photo's detail shows through
    assert float(gone.abs().max()) < 1e-5  # the edit's own content only

