from PIL import Image

from scripts.figures.photo_rating import keep_pairs, read_pairs


def test_kept_pairs_come_back_as_they_were_made_without_their_numbers(tmp_path):
    items = [{"source": "a.jpg", "method": "region-space@old", "attribute": "Blond_Hair", "target": 1,
              "edited": "B", "question": "q", "item": 7},
             {"source": "b.jpg", "method": "denoised", "attribute": "Smiling", "target": 0, "edited": "A",
              "question": "r"}]
    pictures = [(Image.new("RGB", (4, 4), (10 * k, 0, 0)), Image.new("RGB", (4, 4), (0, 10 * k, 0))) for k in (1, 2)]
    keep_pairs(tmp_path / "pairs", items, pictures)
    read_items, read_pictures = read_pairs(tmp_path / "pairs")
    assert [item["method"] for item in read_items] == ["region-space@old", "denoised"]
    assert all("item" not in item for item in read_items)  # numbered again after the shuffle
    assert [(a.getpixel((0, 0)), b.getpixel((0, 0))) for a, b in read_pictures] == [((10, 0, 0), (0, 10, 0)),
                                                                                   ((20, 0, 0), (0, 20, 0))]


def test_the_instructions_name_each_rated_attributes_damage_and_the_sets_size():
    from scripts.figures.photo_rating import DAMAGE, GENERAL_DAMAGE, instructions

    text = instructions(["Blond_Hair", "Smiling", "Young"], 117, 15)
    assert "117 items" in text and "15 sheets" in text
    assert DAMAGE["Blond_Hair"] in text and DAMAGE["Smiling"] in text and GENERAL_DAMAGE in text
    assert DAMAGE["Eyeglasses"] not in instructions(["Smiling"], 8, 1)  # only the rated attributes' damage


def test_a_label_without_its_method_is_refused_with_the_form_it_takes(tmp_path, capsys):
    import pytest

    from scripts.figures.photo_rating import main

    with pytest.raises(SystemExit):
        main(["--photos", str(tmp_path), "--label", "region-space@a5c6c2f", "--out", str(tmp_path / "set")])
    assert "--label takes METHOD=LABEL" in capsys.readouterr().err
    assert not (tmp_path / "set").exists()  # refused before anything is made
