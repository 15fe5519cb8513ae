import pytest
import torch

from recourse.compression.bitpack import pack_codes, unpack_codes


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
def test_codes_round_trip_at_every_width(bits):
    half = 2 ** (bits - 1)
    codes = torch.randint(-half, half, (101,), generator=torch.Generator().manual_seed(bits))
    packed = pack_codes(codes, bits)
    assert packed.dtype == torch.uint8 and len(packed) == (101 * bits + 7) // 8
    assert torch.equal(unpack_codes(packed, bits, 101), codes.to(torch.int16))


def test_four_bit_codes_pack_two_per_byte_high_nibble_first():
    # -8 → 0b0000, 7 → 0b1111, 0 → 0b1000, -1 → 0b0111
    assert pack_codes(torch.tensor([-8, 7, 0, -1]), 4).tolist() == [0b00001111, 0b10000111]


def test_out_of_range_codes_are_refused():
    with pytest.raises(ValueError, match="4-bit range"):
        pack_codes(torch.tensor([8]), 4)
    with pytest.raises(ValueError, match="bits must be"):
        pack_codes(torch.tensor([0]), 9)
