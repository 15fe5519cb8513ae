"""``recourse counterfactual``: write original | counterfactual | difference for one photo."""

from __future__ import annotations

import argparse
from dataclasses import replace

import recourse.cli.common as common
from recourse.cli.common import SINGLE_FACE_MARGIN, _counterfactual_config, _model_dir, add_generation_options, shown
from recourse.locations import generator_dir, variants_dir


def register(commands) -> None:
    single = commands.add_parser("counterfactual", help="write original | counterfactual | difference for one photo")
    single.add_argument("image")
    single.add_argument("--attribute", required=True)
    single.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    single.add_argument("--out", required=True, help="PNG to write")
    single.add_argument("--variant",
                        help="a committed compressed variant (any folder of checkpoints/variants, e.g. ptq-int8 or "
                             "gptq-int2): its fake-quantized twin guides the edit and its integer model decides where "
                             "it stops, as in audit")
    single.add_argument("--checkpoint", help="a classifier folder or a compressed variant's folder "
                                             "(default checkpoints/classifier, the full-precision model)")
    single.add_argument("--no-align", action="store_true", help="the photo is already a CelebA-HQ-framed face")
    add_generation_options(single, SINGLE_FACE_MARGIN)
    single.set_defaults(run=run, uses_committed_models=uses_committed_models)


def uses_committed_models(args: argparse.Namespace) -> bool:
    """A committed variant, the committed classifier or the committed generator."""
    return args.variant is not None or args.checkpoint is None or args.generator == str(generator_dir())


def _guiding_model(args: argparse.Namespace):
    """The model a counterfactual is made for, as a :class:`recourse.audit.paired.Student`, and its
    input size: a committed variant (``--variant``), a variant folder or a classifier folder
    (``--checkpoint``). A variant's twin guides and its decider stops, as in an audit; a
    classifier does both."""
    from recourse.audit.paired import Student
    from recourse.checkpoints import read_config
    from recourse.compression import load_variant

    if args.variant is not None:
        from recourse import models

        student = models.load_student(args.variant)
        return student, int(read_config(variants_dir() / args.variant)["classifier"]["resolution"])
    directory = _model_dir(args, args.checkpoint)
    record = read_config(directory)
    if "method" in record:  # a compressed variant's folder
        return Student.from_variant(directory.name, load_variant(directory)), int(record["classifier"]["resolution"])
    model = common.load_classifier(directory)
    return Student(shown(directory), model, model), model.config.resolution


def run(args: argparse.Namespace) -> int:
    from recourse.audit.paired import flip_targets, own_recourse
    from recourse.data import attribute_index, resize_square, to_float_images
    from recourse.faces import align_face, load_photo
    from recourse.generation import load_generator
    from recourse.render.pictures import side_by_side

    attribute_index(args.attribute)  # an unknown attribute is refused before any photo is read
    if args.variant is not None and args.checkpoint is not None:
        raise ValueError("give --variant or --checkpoint, not both")
    import torch

    from recourse.audit.paired import stop_on_paths
    from recourse.audit.stops import stops_for
    from recourse.generation import CounterfactualConfig

    stops = stops_for(args.margin)
    config = replace(_counterfactual_config(args, CounterfactualConfig()), margin=stops.edit)
    student, resolution = _guiding_model(args)
    if args.no_align:
        image = resize_square(load_photo(args.image), resolution)
    else:
        aligned = align_face(args.image, resolution)
        print(aligned.message)
        image = aligned.image
    x = to_float_images(image[None])
    target = args.target if args.target is not None else int(flip_targets(student.decider, x, args.attribute)[0])
    result = own_recourse(x, args.attribute, target, student, config, load_generator(args.generator))
    # the picture: the first point of the whole edit where the deciding model is past the stop
    picture = stop_on_paths(x, result.edits, student.decider, args.attribute, torch.tensor([target]), stops.visible)
    side_by_side(result.originals[0], picture[0]).save(args.out)
    with torch.no_grad():
        after = float(torch.sigmoid(student.decider(picture)[0, attribute_index(args.attribute)]))
    guided = ("its fake-quantized twin guided, its integer model decided" if student.kind == "integer"
              else "it guided and decided")
    print(f"{student.name} ({guided}), shown at margin {stops.visible:g} ({stops.visible_source}) of an edit aimed "
          f"past {stops.edit:g}: {args.attribute} p = {result.probability_before.item():.3f} → {after:.3f} "
          f"(decides {int(after >= 0.5)}; target {target}, {'valid' if (after >= 0.5) == bool(target) else 'NOT valid'}), "
          f"cost {float((picture - x).abs().mean()):.4f}, {result.seconds:.2f} s; wrote {args.out}")
    return 0
