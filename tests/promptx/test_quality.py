"""promptx.quality: one case per finding (with a faithful rewrite that passes), the labelled
pairs of tests/data/faithfulness, and assessing many texts in a row."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from promptx.profiles.registry import default_registry
from promptx.quality import KINDS, Assessment, assess
from promptx.quality.constraint import DecodingConstraint, VocabularyIndex
from promptx.quality.salvage import drop_offending_sentences, say_asked_view, say_lost_camera

LABELS_DIR = Path(__file__).resolve().parents[1] / "data" / "faithfulness"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LABEL_FIELDS = {"id", "source", "target", "label", "kinds", "why"}

CAT = "a cat sleeping on a sofa"
# a faithful rewrite of CAT inside the video budget (60-120 words)
CAT_VIDEO = (
    "A cat sleeps on a soft sofa, its tail curled around its paws. Soft light falls across "
    "the scene as the camera glides slowly forward, revealing fine texture, gentle motion and "
    "a calm, cinematic mood with natural colors and shallow depth of field, while a light "
    "breeze stirs the air and the shot holds steady for a long, quiet moment before the "
    "frame fades."
)
CAT_CHINESE = (
    "一只猫蜷缩在柔软的沙发上安静地睡觉，午后的阳光透过窗户洒在它的毛上，尾巴轻轻摆动，"
    "镜头缓慢推进，画面温暖而宁静，背景是一间舒适的客厅，书架上摆满了书，窗帘随风轻轻飘动。"
)
LAKE = "a mountain lake at dawn"
LAKE_TEXT = "A calm mountain lake at dawn, mist drifting over the still water below snowy peaks."
FOREST = "a quiet forest clearing"
STREET = "a busy street at night"


@lru_cache(maxsize=None)
def profile(name: str | None):
    return default_registry().get(name) if name else None


def codes(prompt: str, text: str, profile_name: str | None = None, **kw) -> dict[str, str]:
    """code -> kind of every finding of ``assess``."""
    return {f.code: f.kind for f in assess(prompt, text, profile(profile_name), **kw).findings}


# (kind, code, prompt, unfaithful output, faithful output, profile)
FINDING_PAIRS = [
    (
        "lost",
        "lost_subject",
        "a dog running on the beach",
        "Waves roll onto the empty beach at sunset, foam glittering under a pink sky.",
        "A dog runs along the beach at sunset, paws splashing in the shallow surf.",
        None,
    ),
    (
        "lost",
        "lost_color",
        "a red car parked on a street",
        "A car parked on a quiet street, its chrome catching the morning light.",
        "A crimson car parked on a quiet street, its chrome catching the morning light.",
        None,
    ),
    (
        "lost",
        "lost_quote",
        'a shop sign that reads "OPEN"',
        "A wooden shop sign hangs above the door, its painted letters glowing in the dusk.",
        'A wooden shop sign that reads "OPEN" hangs above the door, glowing in the dusk.',
        None,
    ),
    (
        "lost",
        "lost_relation",
        "a cup to the left of a book",
        "A white ceramic cup and a thick hardcover book rest on a wooden desk in soft light.",
        "A white ceramic cup sits to the left of a thick hardcover book on a wooden desk.",
        None,
    ),
    (
        "added_subject",
        "added_person",
        LAKE,
        "A calm mountain lake at dawn, "
        "a woman standing on the shore as mist drifts over the water.",
        LAKE_TEXT,
        None,
    ),
    (
        "added_subject",
        "added_animal",
        LAKE,
        "A calm mountain lake at dawn, a deer standing on the shore as mist drifts over the water.",
        LAKE_TEXT,
        None,
    ),
    (
        "added_subject",
        "added_vehicle",
        LAKE,
        "A calm mountain lake at dawn, a truck parked on the shore as mist drifts over the water.",
        LAKE_TEXT,
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "a cat sitting on a windowsill",  # a second main subject
        "A cat and a dog sit together on a sunny windowsill.",
        "A tabby cat sits on a sunny windowsill, watching the rain.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        FOREST,  # seen, not only heard
        "A quiet forest clearing, sunlight filtering through the leaves as birds fly overhead.",
        "A quiet forest clearing, sunlight filtering through the leaves while birds chirp in the "
        "canopy.",
        None,
    ),
    (
        "added_subject",
        "added_person",
        STREET,  # a person with a story of her own
        "A busy street at night where a woman waits alone under a flickering streetlamp.",
        "A busy street at night, pedestrians crossing under neon signs while traffic streams past.",
        None,
    ),
    (
        "added_subject",
        "added_person",
        "a quiet town square",
        "A quiet town square where a man sits on the edge of the fountain.",
        "A quiet town square with a statue of a man on horseback at its center.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a woman with silver hair",
        "A woman with dark hair stands by a window in soft afternoon light.",
        "A woman with long silver hair stands by a window in soft afternoon light.",
        None,
    ),
    (
        "contradiction",
        "count",
        "three apples on a table",
        "A single apple rests on a rustic wooden table in warm window light.",
        "Three shiny apples rest on a rustic wooden table in warm window light.",
        None,
    ),
    (
        "contradiction",
        "count",
        "five candles on a birthday cake",  # adjectives between
        "A round birthday cake topped with seven slender striped candles, flames flickering.",
        "A round birthday cake topped with five slender striped candles, flames flickering.",
        None,
    ),
    (
        "contradiction",
        "count",
        "a pair of red shoes on a doorstep",
        "single red high heel shoe, stone doorstep, morning light, fashion photography",
        "pair of red high heel shoes, stone doorstep, morning light, fashion photography",
        None,
    ),
    (
        "contradiction",
        "count",
        "a pair of blue sneakers by a door",  # two pairs are four
        "Two pairs of blue sneakers stand by a wooden door in the morning light.",
        "A pair of blue sneakers stands by a wooden door in the morning light.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a green leaf and a yellow flower",  # said again by a synonym
        "A green leaf and a yellow flower lie on a stone bench. "
        "The pink blossom is half hidden by the leaf.",
        "A green leaf and a yellow flower lie on a stone bench. "
        "The yellow blossom is half hidden by the leaf.",
        None,
    ),
    (
        "lost",
        "lost_change",
        "A flower changes from purple to orange.",  # the change's end never comes
        "A purple flower sways in the breeze in a quiet garden, dew on its petals.",
        "A purple flower slowly turns orange in a quiet garden, dew on its petals.",
        None,
    ),
    (
        "lost",
        "lost_change",
        "The plastic toy transformed into a glass toy.",  # the glass comes first
        "A glass plastic toy on a table transformed into a heavy wooden spoon.",
        "A plastic toy on a table slowly transformed into a clear glass toy.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "a towel beside a hair drier",  # the hair keeps no drier
        "A folded white towel on a shelf, for anyone who wants to keep their hair dry.",
        "A folded white towel on a shelf beside a black hair drier.",
        None,
    ),
    (
        "lost",
        "lost_shape",
        "a teardrop pendant and a triangular chain necklace",  # a shape said nowhere
        "A teardrop pendant hangs beside a thin chain necklace on a velvet stand, "
        "glinting in soft light.",
        "A teardrop pendant hangs beside a triangle-shaped chain necklace on a velvet stand.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "a corgi playing in a park at sunset",  # a duck, though mostly a verb
        "A corgi plays in a park at sunset while two ducks sit on the steps beside it.",
        "A corgi plays in a park at sunset, chasing a red ball across the grass.",
        None,
    ),
    (
        "lost",
        "lost_count",
        "four wine glasses on a marble counter",
        "Several crystal wine glasses stand on a polished marble counter in warm light.",
        "Four crystal wine glasses stand on a polished marble counter in warm light.",
        None,
    ),
    (
        "lost",
        "lost_material",
        "a wooden sailboat on a calm lake",
        "A sleek sailboat rests on a calm lake at dawn, its sail hanging slack in the still air.",
        "A weathered oak sailboat rests on a calm lake at dawn, "
        "its sail hanging slack in the still air.",
        None,
    ),
    (
        "contradiction",
        "material",
        "a wooden chair by a window",
        "A metal chair stands by a tall window, its frame catching the afternoon light.",
        "A pine chair stands by a tall window, its grain catching the afternoon light.",
        None,
    ),
    (
        "lost",
        "lost_relation",
        "a cat sitting on top of a washing machine",  # "above" elsewhere keeps nothing
        "A grey cat sits on the floor beside a washing machine. "
        "Light falls through a small window above.",
        "A grey cat perches on a white washing machine, its tail hanging over the edge.",
        None,
    ),
    (
        "contradiction",
        "relation",
        "a toilet on the left of a hair dryer",
        "A chrome hair dryer hangs on the left wall. On the right side stands a white toilet.",
        "A white toilet stands on the left of a chrome hair dryer in a tiled bathroom.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "a shark swimming in the ocean",  # a shark is a fish, not many
        "A shark glides through the deep blue ocean while schools of fish scatter around it.",
        "A shark glides through the deep blue ocean, the fish's fins cutting through the water.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "ocean",
        "A vast ocean under a dramatic sky; "
        "in the distance a pod of dolphins arcs out of the swell.",
        "A vast ocean under a dramatic sky, long swells rolling toward the horizon.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "老渔夫在湖边钓鱼",
        "清晨的湖面笼罩着一层薄雾，老渔夫坐在岸边的木凳上，手握竹制鱼竿，静静注视着水面上的浮漂。一只黑色的大狗趴在他的脚边。",
        "清晨的湖面笼罩着一层薄雾，老渔夫坐在岸边的木凳上，手握竹制鱼竿，静静注视着水面上的浮漂，一条银色的鱼跃出水面。",
        "qwen-image",
    ),
    (
        "contradiction",
        "camera",
        "a close up of a blue and orange liquid, camera zooms in",
        "The blue and orange liquid flattens into droplets as the camera zooms out and slowly "
        "pulls back.",
        "The blue and orange liquid flattens into droplets as the camera slowly pushes in toward "
        "them.",
        None,
    ),
    (
        "contradiction",
        "camera",
        "black and white bubbles, camera static",
        "Black and white bubbles swirl and rise while the camera slowly moves forward along their "
        "edges.",
        "Black and white bubbles swirl and rise while the camera stays still, "
        "framing them from the front.",
        None,
    ),
    (
        "contradiction",
        "camera",
        "mesmerizing bubbles, camera static",
        "The camera starts at a still frame and slowly moves forward toward the mesmerizing "
        "bubbles.",
        "The camera holds a still frame while the mesmerizing bubbles drift slowly toward it.",
        None,
    ),
    (
        "lost",
        "lost_camera",
        "Alhambra, pan right.",
        "The Alhambra's arches glow in soft midday light, "
        "the camera holding a medium shot from below.",
        "The Alhambra's arches glow in soft midday light as the camera pans slowly to the right "
        "along them.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a blue backpack and a brown cow",  # said of it after "is"
        "A blue backpack and a brown cow rest on a bench. "
        "The backpack is white with a black strap.",
        "A blue backpack and a brown cow rest on a bench. The backpack is blue with a black strap.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a yellow taxi and a black tire",
        "A yellow taxi and a black tire sit by the curb. "
        "The black tire is painted in red and white.",
        "A yellow taxi and a black tire sit by the curb. The black tire is worn and dusty.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a blue train at a station",
        "A blue train waits at a station. The train is a sleek black wagon with rolled-down seats.",
        "A blue train waits at a station. "
        "The train is a sleek blue and silver wagon with open doors.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a red swirl above a black dashed line",  # "dark blue" is a blue
        "A red swirl floats above a black dashed line. "
        "The line is dark blue on a white background.",
        "A red swirl floats above a black dashed line. "
        "The line is dark grey on a white background.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A man is running.",
        "A man in a brown leather jacket walks slowly through a quiet park, "
        "glancing up at the bare trees.",
        "A man in a grey tracksuit sprints along a park path, arms pumping, "
        "his breath misting in the cold.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A woman is dancing.",
        "A woman in a loose dress stands on a beach at sunset, "
        "takes a deep breath and smiles at the waves.",
        "A woman in a loose dress dances barefoot on a beach at sunset, "
        "twirling as her skirt flares out.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "cash on a wooden table",  # WordNet: a possession
        "A polished walnut table in a quiet room, "
        "a brass candlestick and a small dagger on its edge.",
        "Crumpled banknotes and a few coins lie on a polished walnut table in a quiet room.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "a book on a wooden table",  # WordNet: a work
        "A small brass lamp stands on a wooden table in a quiet room, its light warm on the grain.",
        "A worn paperback lies open on a wooden table in a quiet room, "
        "lamp light warm on its pages.",
        None,
    ),
    (
        "contradiction",
        "medium",
        "a sketch of a train",
        "A rough sketch of a red train on a winding track, loose pencil lines. "
        "Calm realistic photograph.",
        "A rough sketch of a red train on a winding track, "
        "loose pencil lines and soft graphite shading.",
        None,
    ),
    (
        "contradiction",
        "medium",
        "a painting of a fox in the style of starry night",
        "fox in the style of starry night, swirling blue sky, yellow stars, still life photograph",
        "fox in the style of starry night, swirling blue sky, yellow stars, thick oil brushstrokes",
        "sdxl",
    ),
    (
        "contradiction",
        "color",
        "a white horse galloping along a beach",  # not a plain colour word
        "A glossy chestnut horse gallops along the wet edge of a wide sandy beach.",
        "A glossy white horse gallops along the wet edge of a wide sandy beach.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "a bakery window with croissants",  # "food" is too general
        "A bakery window full of tarts, eclairs and other food under warm lights.",
        "A bakery window full of flaky croissants and tarts under warm lights.",
        None,
    ),
    (
        "added_subject",
        "added_animal",
        "a fat rabbit in a purple robe",
        "A fat rabbit in a purple robe walks through an enchanted forest full of whimsical "
        "creatures.",
        "A fat rabbit in a purple robe walks through an enchanted forest, "
        "the creature's robe trailing.",
        None,
    ),
    (
        "lost",
        "lost_relation",
        "a girl holding a red balloon",
        "A girl in a yellow coat stands in a park; "
        "a red balloon floats in the sky far above the trees.",
        "A girl in a yellow coat stands in a park, a red balloon on a string in her hand.",
        None,
    ),
    (
        "form",
        "past_tense",
        "the girl turns and smiles",
        "The girl had been staring at the valley for a long time. "
        "Then she slowly turned toward the camera and smiled.",
        "The girl looks out over the valley, then slowly turns toward the camera and smiles.",
        None,
    ),
    (
        "form",
        "first_person",
        "ocean",
        "A vast ocean under a grey sky; I count the waves as they roll in.",
        "A vast ocean under a grey sky, long waves rolling toward the shore, "
        "forget-me-nots on the dune.",
        None,
    ),
    (
        "form",
        "second_person",
        CAT,
        "You can see a cat sleeping on a soft sofa, its tail curled around its paws.",
        "A cat sleeps on a soft sofa, its tail curled around its paws.",
        None,
    ),
    (
        "form",
        "dialogue",
        "a woman standing in a kitchen",
        "A woman stands in a sunlit kitchen and turns around. "
        '"Breakfast is ready" she says softly.',
        'A woman stands in a sunlit kitchen beside a sign reading "FRESH BREAD".',
        None,
    ),
    (
        "form",
        "past_tense",
        "a man walking through a forest",
        "A man walked through the forest. He stopped by a stream and he looked up at the trees, "
        "and the wind was cold.",
        "A man walks through the forest, stops by a stream and looks up at the tall trees.",
        None,
    ),
    (
        "form",
        "preamble",
        CAT,
        "Sure! Here is an enhanced prompt: a cat sleeps on a soft sofa, "
        "its tail curled around its paws.",
        "A cat sleeps on a soft sofa, its tail curled around its paws.",
        None,
    ),
    (
        "lost",
        "lost_number",
        "7 dogs sitting around a poker table",
        "A group of dogs sits around a poker table under a green lamp, cards fanned in their paws.",
        "Seven dogs sit around a poker table under a green lamp, cards fanned in their paws.",
        None,
    ),
    (
        "lost",
        "lost_number",
        "42",
        "A small wooden farmhouse with white windows stands in a field of hay at dawn.",
        "The number 42 painted in tall white digits on a weathered red barn door at dawn.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "corgi pizza",  # a crisp is not a pizza, "food" keeps no pizza in particular
        "A black corgi stands by a kitchen table of crisps, "
        "bacon and other food in bright morning light.",
        "A round pizza shaped like a corgi's face, pepperoni eyes and crust ears, "
        "on a wooden board.",
        None,
    ),
    (
        "lost",
        "lost_subject",
        "a blue cow standing next to a tree",
        "A blue cow stands in a field beside a tall fern and a bush of white roses in soft light.",
        "A blue cow stands in a field beside a tall oak tree in soft light.",
        None,
    ),
    (
        "form",
        "explains",
        "golden ratio",
        "The golden ratio is a mathematical concept named after an ancient sculptor, "
        "defined by a formula.",
        "A nautilus shell cut in half on black velvet, "
        "its golden ratio spiral traced in thin gold lines.",
        None,
    ),
    ("form", "language", CAT, CAT_CHINESE, CAT_VIDEO, "video"),
    ("form", "length", CAT, "A cat sleeps on a sofa.", CAT_VIDEO, "video"),
    (
        "contradiction",
        "count",
        "a horse reading a book",  # one thing referred back to as several
        "A white horse stands in a meadow with a book open before it. "
        "The horses turn a page together.",
        "A white horse stands in a meadow with a book open before it, "
        "turning a page with its nose.",
        None,
    ),
    (
        "contradiction",
        "time_of_day",
        "an empty street at night",
        "An empty cobbled street at night, a single lamp glowing under a clear morning sky.",
        "An empty cobbled street at night, a single lamp glowing under a starry sky.",
        None,
    ),
    (
        "contradiction",
        "opposite",
        "a pentagonal box on a desk",
        "A rectangular cardboard box sits on a wooden desk in soft light.",
        "A pentagonal cardboard box sits on a wooden desk in soft light.",
        None,
    ),
    (
        "contradiction",
        "opposite",
        "the textured cube beside a lamp",
        "The cube has an even smooth texture and sits beside a brass lamp.",
        "The textured cube, ridged and matte, sits beside a brass lamp.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a brown banana on a plate",  # the colour of its skin
        "A brown banana lies on a white plate. The banana has pale yellow skin and a green stem.",
        "A brown banana lies on a white plate. The banana has speckled brown skin and a dark stem.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a white cat on a sill",  # grey is not white (silver is both)
        "A white cat with a short grey coat sits on a window sill in soft light.",
        "A white cat with a short silver coat sits on a window sill in soft light.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a white bird on a branch",  # the only animal's feathers
        "A white bird perches on a branch beside a red leaf. Its feathers are soft gray.",
        "A white bird perches on a branch beside a red leaf. Its feathers are soft and pale.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a white cat on a sill",  # "its coat a ... colour"
        "A white cat sits on a sill, its fluffy coat a soft gold color.",
        "A white cat sits on a sill, its fluffy coat a soft cream white color.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a red car by a house",  # the car's own paint
        "A red car is parked by a house. The car's paint is a deep blue.",
        "A red car is parked by a house. The car's paint is a deep glossy red.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a pink donut on a plate",  # the colour of its glaze
        "A pink donut rests on a plate. The donut has a thick brown glaze and sprinkles.",
        "A pink donut rests on a plate. The donut has a thick pink glaze and sprinkles.",
        None,
    ),
    (
        "contradiction",
        "camera_still",
        "The camera orbits around. Lighthouse.",  # kept still: no orbit
        "A white lighthouse stands on a rocky point. The camera holds still at eye level.",
        "A white lighthouse stands on a rocky point as the camera slowly circles it at eye level.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A man is sweeping the porch.",
        "A man in a grey coat stands on a wooden porch, looking out at the quiet street.",
        "A man in a grey coat pushes a broom across the wooden porch, dust lifting in the light.",
        None,
    ),
    (
        "contradiction",
        "kind",
        "a cat behind a chicken",
        "A cat rests behind a chicken in a yard. The chicken is a young deer with soft ears.",
        "A cat rests behind a plump brown chicken in a sunny yard.",
        None,
    ),
    (
        "contradiction",
        "material",
        "a leather jacket on a chair",  # said again, even after an echo
        "A leather jacket hangs on a chair. The leather jacket is a dark grey wool jacket.",
        "A leather jacket hangs on a chair. The jacket is worn and soft at the elbows.",
        None,
    ),
    (
        "contradiction",
        "material",
        "a glass jar next to a spoon",  # "is another ... <material> <noun>"
        "A glass jar stands next to a spoon. The glass jar is another shiny tin can on the shelf.",
        "A glass jar stands next to a spoon. The jar is tall and clear, catching the light.",
        None,
    ),
    (
        "contradiction",
        "opposite",
        "a stack of dry paper napkins",  # paper things are real things
        "A stack of dry paper napkins sits on a tray. Water soaks the wet napkins at the edge.",
        "A stack of dry paper napkins sits on a tray, crisp and neatly folded.",
        None,
    ),
    (
        "contradiction",
        "count",
        "the diamond ring on a velvet cushion",  # a ring: a shape first, then a jewel
        "The two diamond rings rest on a velvet cushion on a dresser, soft light.",
        "The diamond ring rests on a velvet cushion on a dresser, soft light.",
        None,
    ),
    (
        "contradiction",
        "count",
        "a pumpkin on a porch step",  # a fruit, though the plant comes first
        "A pumpkin sits on a porch step. The pumpkins glow orange in the low sun.",
        "A pumpkin sits on a porch step. The pumpkin glows orange in the low sun.",
        None,
    ),
    (
        "contradiction",
        "count",
        "a microwave on a kitchen counter",  # an appliance, not the radiation
        "A microwave on a kitchen counter. The microwaves hum side by side under the cabinets.",
        "A microwave on a kitchen counter. The microwave hums under the cabinets.",
        None,
    ),
    (
        "contradiction",
        "count",
        "two teaspoons beside a saucer",  # said by the word it ends in
        "Two teaspoons lie beside a saucer. The three spoons shine in the morning light.",
        "Two teaspoons lie beside a saucer. The spoons shine in the morning light.",
        None,
    ),
    (
        "contradiction",
        "camera",
        "A bench in a park, zoom out.",  # travelling toward it is a zoom in
        "A wooden bench in a green park. The camera slowly glides toward the bench at eye level.",
        "A wooden bench in a green park. The camera slowly pulls back to show the lawn around it.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A boy is reading on a bench, then he suddenly starts singing.",  # any verb
        "A boy reads a paperback on a park bench, turning the pages slowly as pigeons peck nearby.",
        "A boy reads on a park bench, then lowers the book and sings, his mouth wide open in song.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A woman is knitting, then she starts making a sandwich.",  # a light verb's object
        "A woman knits a red scarf by the window, then she sets down her needles and makes tea.",
        "A woman knits by the window, then sets the needles down and makes a ham sandwich.",
        None,
    ),
    (
        "lost",
        "lost_camera",
        "A timelapse of ice melting on a windowsill.",  # a speed said nowhere
        "A block of ice melts slowly on a sunny windowsill, "
        "water pooling around it as the camera holds still.",
        "A timelapse of a block of ice melting on a sunny windowsill, water pooling around it.",
        None,
    ),
    (
        "contradiction",
        "speed",
        "a flower blooming, timelapse",
        "A pink flower slowly opens its petals in slow motion against a dark backdrop.",
        "A pink flower opens its petals in a fast timelapse against a dark backdrop.",
        None,
    ),
    (
        "contradiction",
        "count",
        "the wooden rectangle beside the cube",
        "Two wooden rectangles lean beside the cube on a bare table.",
        "The wooden rectangle leans beside the cube on a bare table.",
        None,
    ),
    (
        "contradiction",
        "count",
        "four cups on a tray",  # more than the prompt counts
        "Four red cups sit on a wooden tray; the five cups catch the morning light.",
        "Four red cups sit on a wooden tray; the cups catch the morning light.",
        None,
    ),
    (
        "contradiction",
        "time_of_day",
        "a night market in the rain",
        "A night market in the rain, its stalls glowing under soft daylight.",
        "A night market in the rain, its stalls glowing under strings of lanterns.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a brown bird and a blue bear",  # "bear" is mostly a verb: a noun here
        "A brown bird and a blue bear sit on a rock. The black bear has its paws folded.",
        "A brown bird and a blue bear sit on a rock. The blue bear has its paws folded.",
        None,
    ),
    (
        "contradiction",
        "material",
        "rubber boots by the door",
        "Rubber boots stand by the door; the boots are stitched leather.",
        "Rubber boots stand by the door; the boots are glossy and wet.",
        None,
    ),
    (
        "contradiction",
        "age",
        "a comic about a boy and a tiger",
        "A comic panel of a boy and a tiger; the boy has a short dark beard and a wide grin.",
        "A comic panel of a boy and a tiger; the boy has a gap-toothed grin and messy hair.",
        None,
    ),
    # read from blind8: a side is a place ("the right of a bench" is no right someone has)
    (
        "contradiction",
        "count",
        "a parking meter on the right of a bench, front view",
        "A parking meter on the right of a bench, front view. "
        "It stands in the corner between two benches.",
        "A parking meter on the right of a bench, front view. "
        "It stands at the corner of the bench.",
        None,
    ),
    (
        "contradiction",
        "material",
        "the metallic books on a wooden shelf",  # restated, not predicated
        "The metallic books stand on a wooden shelf. The glass books catch the light.",
        "The metallic books stand on a wooden shelf. The steel books catch the light.",
        None,
    ),
    (
        "contradiction",
        "material",
        "a rubber band and a glass window",
        "A rubber band and a glass window. The plastic band is draped across the window.",
        "A rubber band and a glass window. The thin band is draped across the window.",
        None,
    ),
    (
        "contradiction",
        "opposite",
        "a square book and a cylindrical pencil",
        "A rectangular book and a cylindrical pencil lie side by side on white paper.",
        "A square book and a cylindrical pencil lie side by side on white paper.",
        None,
    ),
    (
        "contradiction",
        "relation",
        "a donut on the bottom of broccoli, front view",
        "A small donut sits on top of a head of broccoli. Front view.",
        "A small donut sits at the bottom of a head of broccoli. Front view.",
        None,
    ),
    (
        "lost",
        "lost_action",
        "A horse is trotting around a stable, then it suddenly stops to drink water.",
        "A chestnut horse trots around the stable, "
        "then stops and swishes its tail by the water trough.",
        "A chestnut horse trots around the stable, then stops and drinks from the water trough.",
        None,
    ),
    (
        "lost",
        "lost_name",
        "The camera orbits around. Petra, the camera circles around.",  # no noun says it
        "Rose-red cliffs rise over a narrow desert canyon as the camera slowly circles around "
        "them.",
        "The rose-red rock facades of Petra rise over a narrow canyon as the camera slowly circles "
        "around them.",
        None,
    ),
    (
        "contradiction",
        "relation",
        "scissors on the left of a teddy bear, front view",  # side by side, not stacked
        "A pair of scissors lies on the left of a teddy bear. The teddy bear rests on top of them. "
        "Front view.",
        "A pair of scissors lies on the left of a teddy bear. "
        "The teddy bear sits upright beside them. Front view.",
        None,
    ),
    (
        "lost",
        "lost_relation",
        "an orange on the bottom of a carrot, front view",  # the fruit, not the colour
        "An orange and a green carrot sit on a table, the carrot in front. "
        "The camera starts at the bottom. Front view.",
        "An orange sits below a green carrot on a wooden table. Front view.",
        None,
    ),
    # read from blind9: the prompt's words, then the first thing put somewhere else
    (
        "contradiction",
        "relation",
        "a kitten on a piano",
        "A kitten on a piano sits on a wide leather armchair by the window, "
        "its tail curled around its paws.",
        "A kitten on a piano sits on the piano's closed lid by the window, "
        "its tail curled around its paws.",
        None,
    ),  # a part named alone ("sits on the closed lid") reads as another support: a retry
    (
        "contradiction",
        "relation",
        "a dog in front of a tent",
        "A dog in front of a tent lies in the tent, its nose poking out of the flap at dawn.",
        "A dog in front of a tent lies in the dewy grass, its nose pointed at the flap at dawn.",
        None,
    ),
    # read from blind9: a change said the other way round, with other ends, or undone
    (
        "contradiction",
        "change",
        "The iron gate turned into a golden gate.",
        "A golden gate turned into an iron one, its bars glinting; "
        "flakes of golden paint drift onto a gravel path.",
        "An iron gate slowly turns into a golden gate, "
        "its bars glinting in the late sun over a gravel path.",
        None,
    ),
    (
        "contradiction",
        "change",
        "A kite changes from red to blue.",
        "A kite changes from red to blue, "
        "its tail ribbons flickering as they change color from green to pink.",
        "A kite changes from red to blue, "
        "its tail ribbons flickering in the wind above a grassy dune.",
        None,
    ),
    (
        "contradiction",
        "change",
        "A balloon changes from big to small.",
        "A balloon changes from big to small over a fairground, then drifts upward, "
        "growing larger again.",
        "A balloon changes from big to small over a fairground, "
        "no bigger than a plum as it drifts upward.",
        None,
    ),
    # read from blind9: a move made in the opening and undone by a camera kept still later
    (
        "contradiction",
        "camera_still",
        "Teapot, pan left.",
        "Teapot, pan left, its spout steaming on a cast-iron stove. "
        "The camera stays fixed on the lid.",
        "Teapot, pan left, its spout steaming on a cast-iron stove. The camera holds still, "
        "then pans on to the window.",
        None,
    ),
    (
        "contradiction",
        "camera_still",
        "The camera orbits around. Statue, the camera circles around.",
        "The camera circles around a bronze statue in a park. "
        "The camera remains still at chest height.",
        "The camera circles around a bronze statue in a park, low and steady at chest height.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a brown scarf on a hook",  # brown and black are no one family
        "A knitted scarf hangs from a brass hook. The scarf is black with thin fringes.",
        "A knitted scarf hangs from a brass hook. The scarf is dark brown with thin fringes.",
        None,
    ),
    (
        "contradiction",
        "color",
        "a green bee on a daisy",  # "the bee is": a noun, though "bee" is a verb too
        "A green bee rests on a white daisy. The bee is orange with striped wings.",
        "A green bee rests on a white daisy. The bee is shiny green with striped wings.",
        None,
    ),
    (
        "contradiction",
        "medium",
        "a cartoon of a bus on a hill",
        "A cartoon of a bus on a hill, its round windows shining. "
        "Realistic look with natural light.",
        "A cartoon of a bus on a hill, its round windows shining. "
        "Bold outlines and flat bright colors.",
        None,
    ),
    (
        "contradiction",
        "medium",
        "an old barn, pencil sketch",
        "An old barn stands in tall grass, a pencil sketch in soft graphite lines. "
        "Detailed 3D rendering.",
        "An old barn stands in tall grass, a pencil sketch in soft graphite lines. "
        "Loose cross-hatching.",
        None,
    ),
    (
        "contradiction",
        "medium",
        "a lighthouse, detailed ink wash",
        "A lighthouse stands on a rocky point under a low grey sky while waves break white below "
        "it. Serene photograph.",
        "A lighthouse stands on a rocky point under a low grey sky while waves break white below "
        "it, in soft washes of diluted black ink.",
        "image",
    ),
]
PAIR_IDS = [f"{code}-{i}" for i, (_, code, *_rest) in enumerate(FINDING_PAIRS)]


@pytest.mark.parametrize(
    ("kind", "code", "prompt", "bad", "good", "name"), FINDING_PAIRS, ids=PAIR_IDS
)
def test_unfaithful_output_gets_the_finding(kind, code, prompt, bad, good, name):
    found = codes(prompt, bad, name)
    assert found.get(code) == kind, found
    assert assess(prompt, bad, profile(name)).verdict == "fail"


@pytest.mark.parametrize(
    ("kind", "code", "prompt", "bad", "good", "name"), FINDING_PAIRS, ids=PAIR_IDS
)
def test_faithful_rewrite_of_the_same_prompt_passes(kind, code, prompt, bad, good, name):
    result = assess(prompt, good, profile(name))
    assert (result.verdict, result.reasons()) == ("pass", [])


# synonyms, more specific words, implied background, camera words, depicted and heard things
FAITHFUL = [
    (
        "a bus in a dark alleyway, camera static",
        "The bus drives slowly down the dark alleyway toward the camera, "
        "its headlights sweeping across the damp walls, while the camera stays static.",
        None,
    ),
    (
        "waves on a beach, tilt up",
        "Waves pull back over the beach as a tilt-up shot rises from the foam to the sky.",
        None,
    ),  # the waves pull back, not the camera
    (
        "a red car",
        "A red car waits by the curb. The car is bright red and glossy in the sun.",
        None,
    ),
    ("a white cat", "A white cat naps on a sofa. The cat is fluffy and its eyes are green.", None),
    (
        "a dog running on the beach",
        "A scruffy golden puppy races along the beach in the surf.",
        None,
    ),
    ("a dog running in a field", "A golden retriever runs through a grassy field.", None),
    ("an animal drinking from a river", "A red fox drinks from a clear river at dawn.", None),
    (CAT, "A kitten sleeps on a sofa in soft light.", None),
    (
        "a person walking in the rain",
        "A young woman walks through the rain under a black umbrella, "
        "puddles rippling at her feet.",
        None,
    ),
    (STREET, "A busy street at night, crowds of people and taxis passing under neon signs.", None),
    (
        "a highway at night",
        "A highway at night, cars streaming past in ribbons of red and white light.",
        None,
    ),
    ("skiing down a snowy slope", "A skier carves down the snowy slope, spraying powder.", None),
    (
        "a city skyline at sunset",
        "A drone shot sweeps over the city skyline at sunset, then settles "
        "into a bird's-eye view of the rooftops.",
        None,
    ),
    (
        "a garden with roses",
        "A garden full of roses, a painting of a horse on the shed wall.",
        None,
    ),
    (
        "two dogs playing in the snow",
        "A pair of dogs play in the fresh snow, leaping through drifts.",
        None,
    ),
    (
        "portrait of a woman, red dress",
        "portrait of a woman, red dress, elegant pose, soft studio lighting, bokeh, 85mm lens, "
        "high detail, sharp focus, masterpiece, best quality, film grain",
        "sdxl",
    ),
    ("一只猫在沙发上睡觉", CAT_CHINESE, "wan-t2v"),  # "keep": the prompt's language is fine
    # an epithet or the young of the subject, its maker, its audience, the owner of an abstraction
    (
        "a corgi playing in a park",
        "A cheerful corgi pup bounds across the park lawn after a ball.",
        None,
    ),
    (
        "a bigfoot walking in a snowstorm",
        "A towering bigfoot trudges through the snowstorm, the creature's fur caked with ice.",
        None,
    ),
    (
        "a shark swimming in the ocean",
        "A great white shark glides through the ocean, the predator's "
        "silhouette dark against the light.",
        None,
    ),
    (
        "a child riding a bicycle",
        "A young boy pedals a small blue bicycle down a quiet lane.",
        None,
    ),
    (
        "a cake",
        "A layered cake on a wooden table, the artistry of the baker shown in its sugar roses.",
        None,
    ),
    (
        "the Parthenon at dusk",
        "The Parthenon glows at dusk, its marble columns a legacy that inspired "
        "artists, poets and architects.",
        None,
    ),
    (
        "a carved door",
        "A heavy oak door, carved by a master craftsman, its panels deep with vines.",
        None,
    ),
    ("a blue chair", "A blue armchair in a quiet study, inviting someone to sit down.", None),
    (
        "a potted plant and a backpack",
        "A potted plant beside a backpack; on the wall hangs a photograph "
        "above, of two friends on a bench.",
        None,
    ),
    (
        "a toilet in a bathroom",
        "A clean white toilet in a tiled bathroom, as if someone is about to use it.",
        None,
    ),
    (
        "a tall stone tower at night",
        "A tall stone tower at night, candlelight hinting at the tower's mysterious inhabitant.",
        None,
    ),
    (
        "a farm at dawn with a cow",
        "A cow grazes on a farm at dawn to the distant chirping of birds.",
        None,
    ),
    (
        "Gwen Stacy reading a book",
        'Gwen Stacy reads a worn copy of "The Amazing Spider-Man." by a window.',
        None,
    ),
    (
        "I am doing my makeup in the morning",
        "A young woman does her makeup at a vanity in the morning light.",
        None,
    ),
    (
        "a cow running to join a herd of cows",
        "A cow runs across the field toward the herd, its companions "
        "lifting their heads as it arrives.",
        None,
    ),
    (
        "a steam train on a mountainside",
        "A steam train climbs the mountainside, passengers at its windows.",
        None,
    ),
    (
        "an amusement park at night",
        "An amusement park at night, children and families in the glow of the rides.",
        None,
    ),
    (
        "a cozy cabin under the northern lights",
        "A log cabin glows in a snowy clearing. Overhead, the "
        "northern lights ripple in curtains of green.",
        None,
    ),  # a relation by its converse
    (
        "friends hanging out at a coffee house",
        "Four friends sit around a table at a coffee house, laughing over mugs of cocoa.",
        None,
    ),
    (
        "a raccoon holding a cane",
        "A raccoon in a tailcoat stands upright with a slim cane in one paw. Behind it, "
        "stylized waves and a snowy mountain fill the background in Prussian blue and muted green.",
        None,
    ),
    # a verb, writing, scenery and a vehicle's own parts
    ("a kitten playing with a string", "A kitten pauses to bat at a dangling string.", None),
    (
        "a busy night market in Taipei",
        "A busy night market in Taipei, signs in Chinese characters over "
        "the stalls and a row of parked scooters at the far end.",
        None,
    ),
    (
        "a person reading on a train",
        "An old man reads a paperback by the window of the train carriage.",
        None,
    ),
    (
        "a zebra and a giraffe",
        "A zebra and a giraffe stand side by side, two animals under a wide sky.",
        None,
    ),
    # every material the prompt gives, a colour code, a pair, a subset, several nouns in colours
    (
        "the glass door turned into a metal door",
        "A glass door slowly hardens into brushed steel.",
        None,
    ),
    (
        "a teal teapot with a #20B2AA lid",
        "A teal teapot with a glossy #20B2AA lid on a white table.",
        None,
    ),
    (
        "a pair of boots by a door",
        "A pair of muddy brown leather boots stands by the front door.",
        None,
    ),
    (
        "a brown bin with a green bin on its left",
        "A brown bin with a green bin on its left; the brown bin is scuffed.",
        None,
    ),
    (
        "a heron and a turtle on a log",
        "A grey heron and a painted turtle share a mossy log, both animals "
        "still in the morning light.",
        None,
    ),
    # numbers in other forms, a compound's head kept by its kind, partitives, a camera's pan
    ("a 70 meter lighthouse", "A seventy-meter white lighthouse on a rocky cliff.", None),
    (
        "a sign with 1,000 stars and a 12:30 clock",
        "A sign with 1000 stars beside a clock showing 12:30.",
        None,
    ),
    ("a cup of matcha tea", "A ceramic cup of bright green matcha on a bamboo mat.", None),
    ("a light house on a cliff", "A white lighthouse stands on a rocky cliff above the sea.", None),
    ("a bridge over a body of water", "A stone bridge arches over calm water at dusk.", None),
    (
        "a slow pan across a cluttered workbench",
        "The camera glides slowly across a cluttered workbench of gears and tiny screwdrivers.",
        None,
    ),
    (
        "咖啡杯上印着“Good Morning”",
        "一只白色陶瓷咖啡杯放在浅色木桌上，杯身印着“Good Morning”，旁边放着一个牛角面包，"
        "杯垫上印着一只白鹤图案，清晨的阳光从窗户照进来，近景平视构图，写实摄影风格。",
        "qwen-image",
    ),
]


@pytest.mark.parametrize(("prompt", "text", "name"), FAITHFUL)
def test_faithful_enhancements_pass(prompt, text, name):
    result = assess(prompt, text, profile(name))
    assert (result.verdict, result.reasons()) == ("pass", [])


def test_language_policy_keep_and_its_override():
    assert codes(CAT, CAT_CHINESE, "wan-t2v") == {"language": "form"}  # English prompt: neither
    assert codes("一只猫在沙发上睡觉", CAT_CHINESE, "video") == {"language": "form"}
    assert codes("一只猫在沙发上睡觉", CAT_CHINESE, "video", language="keep") == {}


def test_image_profile_judges_added_subjects_only_when_the_image_is_described():
    prompt = "the camera slowly zooms in"
    text = (
        "The camera slowly zooms in as a man steps out of the doorway and a dog runs past, "
        "light shifting across the scene and the wind stirring the dust."
    )
    assert codes(prompt, text, "image-to-video") == {}
    assert codes(prompt, text, "image-to-video", context="a man standing in a doorway") == {
        "added_animal": "added_subject"
    }


def test_a_caption_holds_what_the_image_shows():
    car = "A red vintage convertible parked on a coastal cliff road above the ocean."
    prompt = "the car drives off along the coast"
    drive = (
        "convertible's engine turns over and the car pulls away from the roadside, accelerating "
        "along the winding cliff road as the ocean glitters far below. "
        "The camera pans to follow it."
    )
    assert codes(prompt, "The blue " + drive, "image-to-video", context=car) == {
        "color": "contradiction"
    }
    assert codes(prompt, "The red " + drive, "image-to-video", context=car) == {}
    balloons = "Three hot air balloons rising above a green valley at dawn."
    assert codes(
        "the balloons rise higher",
        "Two hot air balloons climb steadily into the brightening dawn "
        "sky above the green valley, their burners flaring as the mist lies in the hollows below.",
        "image-to-video",
        context=balloons,
    ) == {"count": "contradiction"}


def test_an_edit_is_held_to_the_image_only_where_it_keeps():
    cat = "A black cat sitting on a windowsill on a sunny day."
    assert codes(
        "add rain on the window",
        "Add streaks of rain down the window glass; keep the white cat "
        "on the windowsill exactly as it is.",
        "image-to-image",
        context=cat,
    ) == {"color": "contradiction"}
    assert (
        codes(
            "add rain on the window",
            "Add streaks of rain down the window glass; keep the black cat "
            "on the windowsill exactly as it is.",
            "image-to-image",
            context=cat,
        )
        == {}
    )
    moon = "An astronaut in a white suit standing on a grey lunar surface under a black sky."
    assert (
        codes(
            "make the ground red like mars",
            "Change the grey ground into rusty red soil like the surface "
            "of Mars. Keep the astronaut and the white suit unchanged.",
            "image-to-image",
            context=moon,
        )
        == {}
    )


def test_an_empty_prompt_keeps_the_main_subject_of_its_image():
    city = "an aerial view of a busy city with a bridge in the background, camera tilts down"
    assert codes(
        "",
        "The camera tilts down toward a long bridge as bright sunlight glints on the water "
        "below and stretches across its arches.",
        "image-to-video",
        context=city,
    ) == {"lost_subject": "lost"}
    assert (
        codes(
            "",
            "The camera tilts down over the busy city as traffic streams across the long bridge "
            "and sunlight glints on the towers.",
            "image-to-video",
            context=city,
        )
        == {}
    )


def test_an_english_caption_licenses_what_a_chinese_text_names():
    boat = "a wooden rowboat tied to a dock on a misty lake at dawn"
    assert (
        codes(
            "让画面动起来",
            "写实电影风格，画面中晨雾在湖面上缓缓飘移，时浓时淡。拴在码头上的木船随着细小的水波轻轻摇晃，"
            "缆绳一会儿绷紧一会儿松开。远处的天空慢慢泛起淡淡的橙色。镜头从码头一侧缓慢向前推进，靠近木船。",
            "wan-i2v",
            context=boat,
        )
        == {}
    )


def test_assessment_api():
    result = assess("a red car parked on a street", "A blue car parked on a street.")
    assert isinstance(result, Assessment) and not result.passed
    assert result.kinds() == {"contradiction"} and result.kinds() <= set(KINDS)
    assert "car" in result.kept and result.reasons() == [str(f) for f in result.findings]
    assert codes(CAT, "") == {"empty": "form"}


def test_salvage_drops_a_first_person_or_a_chinese_sentence_that_adds_a_subject():
    text = (
        "A vast ocean under a grey sky. I count the waves as they roll in. "
        "Long swells reach the shore."
    )
    salvaged = drop_offending_sentences(text, assess("ocean", text))
    assert salvaged == "A vast ocean under a grey sky. Long swells reach the shore."
    chinese = "老渔夫坐在岸边钓鱼。一只黑色的大狗趴在他的脚边。湖面平静。"
    salvaged = drop_offending_sentences(
        chinese, assess("老渔夫在湖边钓鱼", chinese, language="keep")
    )
    assert salvaged == "老渔夫坐在岸边钓鱼。湖面平静。"


CAMERA_ASKS = [
    (
        "A red fox crosses a snowy field, camera pans left.",
        "pan left",
        "A red fox crosses a snowy field under a pale sky",
    ),
    (
        "A red fox crosses a snowy field, pan right.",
        "pan right",
        "A red fox trots across a snowy field, its breath fogging.",
    ),
    ("A lighthouse on a cliff, tilt up.", "tilt up", "A white lighthouse stands on a rocky cliff."),
    (
        "A lighthouse on a cliff, tilt down.",
        "tilt down",
        "A lighthouse on a cliff above the waves.",
    ),
    (
        "A bowl of ramen on a counter, zoom in.",
        "zoom in",
        "A steaming bowl of ramen on a wooden counter.",
    ),
    (
        "A bowl of ramen on a counter, zoom out.",
        "zoom out",
        "A bowl of ramen sits on a steel counter.",
    ),
    (
        "A bronze statue in a square, the camera orbits around it.",
        "orbit",
        "A bronze statue stands in a quiet square at noon.",
    ),
    (
        "A timelapse of clouds rolling over a valley.",
        "timelapse",
        "Clouds roll over a green valley, their shadows racing across the fields.",
    ),
    (
        "A drop of water falls into a glass of milk in slow motion.",
        "slow motion",
        "A drop of water falls into a glass of milk, a crown of white splashing up.",
    ),
]


@pytest.mark.parametrize(("prompt", "move", "text"), CAMERA_ASKS)
def test_a_text_that_only_lost_the_camera_move_is_mended_by_a_closing_sentence(prompt, move, text):
    before = assess(prompt, text)
    assert [(f.code, f.words) for f in before.findings] == [("lost_camera", [move])]
    mended = say_lost_camera(text, before)
    assert (
        mended.startswith(text.rstrip("."))
        and mended.endswith(".")
        and assess(prompt, mended).passed
    )


def test_a_camera_kept_still_instead_of_the_move_is_mended_without_its_sentence():
    prompt = "A lighthouse on a cliff, tilt up."
    text = (
        "A white lighthouse stands on a rocky cliff. The camera stays fixed at eye level. "
        "Gulls wheel overhead."
    )
    result = assess(prompt, text)
    assert [(f.code, f.kind) for f in result.findings] == [("camera_still", "contradiction")]
    mended = say_lost_camera(text, result)
    assert mended == (
        "A white lighthouse stands on a rocky cliff. Gulls wheel overhead. "
        "The camera tilts slowly upward."
    )
    assert assess(prompt, mended).passed
    pan = "A red fox crosses a snowy field, camera pans left."
    other_way = (
        "A red fox crosses a snowy field. The camera moves slowly right along the fence. "
        "Snow falls."
    )
    mended = say_lost_camera(other_way, assess(pan, other_way))
    assert (
        mended == "A red fox crosses a snowy field. Snow falls. The camera pans slowly to the left."
    )
    timelapse = "A timelapse of clouds rolling over a valley."  # a still camera suits a timelapse
    still = "Clouds roll over a green valley. The camera stays fixed on the ridge."
    assert say_lost_camera(still, assess(timelapse, still)).startswith(still)


@pytest.mark.parametrize(
    ("prompt", "text", "said"),
    [
        (
            "a cup on the left of a fork, front view",
            "A white cup stands left of a silver fork",
            "Front view.",
        ),
        (
            "a vase beside a lamp, side view",
            "A blue vase stands beside a brass lamp on a shelf.",
            "Side view.",
        ),
        (
            "an aerial view of a snowy road in a forest",
            "A snowy road winds through dark pines.",
            "Aerial view.",
        ),
        (
            "a bird's eye view of a harbour",
            "Fishing boats crowd a small stone harbour.",
            "Bird's-eye view.",
        ),
    ],
)
def test_a_view_the_prompt_names_closes_a_text_that_does_not_say_it(prompt, text, said):
    assert say_asked_view(prompt, text) == f"{text.rstrip('.')}. {said}"
    kept = say_asked_view(prompt, text)
    assert say_asked_view(prompt, kept) == kept  # said once
    assert (
        say_asked_view(
            "a cup on the left of a fork, front view", "A cup left of a fork, seen from the front."
        )
        == "A cup left of a fork, seen from the front."
    )
    assert say_asked_view("a cup beside a fork", text) == text  # no view asked


def test_a_lost_camera_move_is_not_mended_beside_another_finding_or_in_chinese():
    prompt = "A red fox crosses a snowy field, camera pans left."
    lost_fox = "Deep snow covers a quiet field under a pale sky, soft light, realistic footage."
    result = assess(prompt, lost_fox)
    assert "lost_camera" in {f.code for f in result.findings} and len(result.findings) > 1
    assert say_lost_camera(lost_fox, result) == lost_fox
    only_camera = assess(prompt, "A red fox crosses a snowy field.")
    assert [f.code for f in only_camera.findings] == ["lost_camera"]
    assert say_lost_camera("一只红狐狸穿过雪地。", only_camera) == "一只红狐狸穿过雪地。"


def test_made_up_text_to_draw_fails_and_its_sentence_can_be_dropped():
    profile = default_registry().get("wan-t2v")
    text = (
        "A black laptop with a sleek aluminum lid sits open on a wooden desk beside a mug and a "
        "small plant. The screen shows 'Sierra Touch', 'Gaming for Windows 10' and 'Power "
        "Display'. Soft daylight falls from a window, and the camera slowly zooms in toward the "
        "glowing screen until the keys fill the frame, warm tones, shallow depth of field, "
        "crisp realistic footage."
    )
    result = assess("Laptop, zoom in.", text, profile)
    assert [f.code for f in result.findings] == [
        "added_text"
    ] and "Sierra Touch" in result.findings[0].words
    salvaged = drop_offending_sentences(text, result)
    assert "Sierra" not in salvaged and assess("Laptop, zoom in.", salvaged, profile).passed
    # one title: a detail
    one_title = 'Gwen Stacy reads a worn copy of "The Amazing Spider-Man" by a window.'
    assert "added_text" not in {
        f.code for f in assess("Gwen Stacy reading a book", one_title).findings
    }
    # licensed
    named = "a laptop showing Sierra Touch, Gaming for Windows 10 and Power Display, zoom in"
    assert "added_text" not in {f.code for f in assess(named, text, profile).findings}


def test_salvage_drops_only_the_sentence_that_adds_a_subject():
    text = (
        "A calm mountain lake at dawn. A deer drinks at the shore. "
        "Mist drifts over the still water."
    )
    salvaged = drop_offending_sentences(text, assess(LAKE, text))
    assert salvaged == "A calm mountain lake at dawn. Mist drifts over the still water."
    assert assess(LAKE, salvaged).passed
    lost = assess("a red boat on a lake", LAKE_TEXT)
    assert drop_offending_sentences(LAKE_TEXT, lost) == LAKE_TEXT  # cannot be mended


def test_a_drawing_in_the_picture_is_no_medium_and_an_edit_may_name_the_photo():
    """The medium is the picture's only where the prompt opens with it or says it as a style:
    "a box with a drawing of an elephant" is a photo subject; "A framed photo hangs" in a
    painting is a thing in it; an edit names the input's medium ("turn the photo into ...")."""
    profile = default_registry().get("image")
    box = "a cat sitting on a box with a drawing of an elephant on it"
    text = (
        "A tabby cat sits on a cardboard box with a marker drawing of an elephant on its side, "
        "soft daylight in a hallway, realistic photograph."
    )
    assert "medium" not in {f.code for f in assess(box, text, profile).findings}
    painting = "an oil painting of a quiet living room"
    inside = (
        "An oil painting of a quiet living room: a green sofa, and a framed photo hangs above it."
    )
    assert "medium" not in {f.code for f in assess(painting, inside, profile).findings}
    assert "medium" in {
        f.code for f in assess(painting, inside + " Realistic photograph.", profile).findings
    }
    assert "medium" in {
        f.code
        for f in assess(
            "a cute corgi, anime style", "A cute corgi. Photorealistic.", profile
        ).findings
    }
    edit = (
        "Turn the photo into a loose watercolor painting, "
        "keeping the lake and the pines where they are."
    )
    assert "medium" not in {
        f.code
        for f in assess(
            "turn it into a watercolor painting", edit, default_registry().get("image-to-image")
        ).findings
    }


def test_salvage_drops_the_sentence_that_calls_a_sketch_a_photograph():
    prompt = "a sketch of a train"
    text = (
        "A rough sketch of a red train on a winding track, drawn in loose pencil lines on plain "
        "paper. The carriages curve around a bend. Calm, photorealistic detail."
    )
    salvaged = drop_offending_sentences(text, assess(prompt, text))
    assert salvaged == text.rsplit(" Calm", 1)[0] and assess(prompt, salvaged).passed


def test_only_actions_said_as_actions_are_judged_and_shown_motions_keep_them():
    profile = default_registry().get("video")
    cases = [  # a modifier, an idiom, a kite flown, a verb outside the table, a synonym
        (
            "a stream of running water in a forest",
            "A clear stream flows over mossy stones in a quiet forest.",
        ),
        (
            "the hourglass runs out",
            "The last grains of sand slip through the neck of the brass hourglass.",
        ),
        (
            "kids flying a kite on a hill",
            "Two kids hold the string as a red kite climbs over a grassy hill.",
        ),
        (
            "a fox sleeping in the snow",
            "A red fox lies curled on fresh snow, its side rising and falling slowly.",
        ),
        (
            "the fox runs into the trees",
            "The red fox springs forward and lopes into the dark trees.",
        ),
    ]
    for prompt, text in cases:
        assert "lost_action" not in {f.code for f in assess(prompt, text, profile).findings}, prompt
    found = assess(
        "A horse is running in the field, then it starts walking calmly.",
        "A white horse walks calmly across the field toward a berry bush.",
        profile,
    ).findings
    assert [f.words for f in found if f.code == "lost_action"] == [["run"]]


def test_a_noun_form_used_as_a_verb_adds_no_animal():
    cases = [
        (
            "a night train crossing a snowy bridge",
            "A long passenger train snakes across a stone bridge.",
        ),
        ("a river in a valley", "A wide river snakes through a green valley under a pale sky."),
        ("a dog eating", "A hungry dog wolfs down its food in a sunny kitchen."),
    ]
    for prompt, text in cases:
        assert not assess(prompt, text).kinds() & {"added_subject"}, text
    assert (
        "added_subject"
        in assess("a garden", "A quiet garden; a snake slides across the path.").kinds()
    )


def test_a_dark_prompt_colour_is_kept_by_any_dark_hue():
    profile = default_registry().get("video")
    prompt = "a jellyfish drifting in dark water"
    kept = "A translucent moon jellyfish drifts through dark blue water, its bell pulsing softly."
    assert "color" not in {f.code for f in assess(prompt, kept, profile).findings}
    lost = "A translucent moon jellyfish drifts through bright blue water, its bell pulsing softly."
    assert "lost_color" in {f.code for f in assess(prompt, lost, profile).findings}


def test_decoding_constraint_bans_what_the_assessment_would_reject():
    index = VocabularyIndex([" cat", " dog", " you", '"', " sofa", " cats", " dogs", "dog"])
    assert index.banned_ids(DecodingConstraint.for_prompt("a cat on a sofa")) == (1, 2, 3, 6)
    assert index.banned_ids(DecodingConstraint.for_prompt('you and your dog say "hi"')) == (0, 5)


# (code, prompt, text, profile): cases the checks of 2026-12-03 must leave alone
NOT_JUDGED = [
    (
        "lost_change",
        "A car turns into a narrow driveway at dusk.",  # a turn of the wheel, no change
        "A red car turns slowly off the road at dusk, its headlights sweeping the hedges.",
        None,
    ),
    (
        "lost_change",
        "A balloon changes from small to large.",  # any word of the size, in order
        "A small red balloon swells until it is huge, its skin stretched thin.",
        None,
    ),
    (
        "camera",
        "a lantern on a porch, zoom in",
        "A lantern glows on a porch. The camera glides toward it, then "
        "drifts back and forth in the breeze.",
        None,
    ),  # not a pull back
    (
        "camera",
        "a lantern on a porch, zoom out",
        "A lantern glows on a porch. The camera pulls back, then moves "
        "toward the left of the steps.",
        None,
    ),  # a sideways move, not a push in
    (
        "count",
        "a black drone and a blue drone",
        "A black drone and a blue drone hover; both drones blink their lights.",
        None,
    ),
    (
        "count",
        "an oak tree on a hill",
        "A lone oak stands on a hill while the trees behind it sway.",
        None,
    ),
    (
        "time_of_day",
        "a harbour from dawn to night, timelapse",
        "The sky turns from a pale dawn into deep night as the harbour lights come on.",
        None,
    ),
    (
        "time_of_day",
        "make it night",
        "Turn the bright daytime sky into a clear night sky with stars; keep the hills unchanged.",
        "image-to-image",
    ),
    (
        "opposite",
        "a big dog and a small dog",
        "A big dog and a small dog sit on a porch; the small dog leans on the big one.",
        None,
    ),
    (
        "opposite",
        "a pentagonal box on a desk",
        "A pentagonal box sits on a desk beside a small lamp and a long ruler.",
        None,
    ),
    (
        "count",
        "a basketball to the left of two soccer balls",
        "A basketball sits left of two soccer balls; all three balls lie in a row.",
        None,
    ),
    ("kind", "a dog on a porch", "A dog sits on the porch. The dog is a golden retriever.", None),
    (
        "age",
        "a man and a boy fishing from a pier",
        "A man and a boy fish from a pier; the man has a short dark beard.",
        None,
    ),
]


def test_salvage_drops_the_sentence_with_a_time_the_prompt_rules_out():
    prompt = "an empty street at night"
    text = (
        "An empty cobbled street at night, a single lamp glowing over wet stones. "
        "Early morning light falls across the shop windows. Wide shot at eye level."
    )
    salvaged = drop_offending_sentences(text, assess(prompt, text))
    assert salvaged == (
        "An empty cobbled street at night, a single lamp glowing over wet stones. "
        "Wide shot at eye level."
    )
    assert assess(prompt, salvaged).passed


def test_an_edit_keeps_the_time_of_day_of_its_image():
    caption = "Six friends chat on a city sidewalk at night beside a shop window with a neon sign."
    changed = (
        "Rainy morning on the sidewalk: the six friends chat under umbrellas beside the neon sign."
    )
    kept = (
        "Rain falls on the sidewalk at night: "
        "the six friends chat under umbrellas beside the neon sign."
    )
    assert (
        codes("make it rainy", changed, "image-to-image", context=caption).get("time_of_day")
        == "contradiction"
    )
    assert "time_of_day" not in codes("make it rainy", kept, "image-to-image", context=caption)


def test_a_static_camera_that_then_travels_is_moved():
    prompt = "a monastery on a cliff, camera static"
    moved = (
        "A white monastery sits on a cliff. The camera holds still at first, "
        "then slowly moves toward the cliff."
    )
    still = (
        "A white monastery sits on a cliff. The camera holds still, "
        "the fog slowly moves across the valley."
    )
    assert codes(prompt, moved, "image-to-video").get("camera") == "contradiction"
    assert "camera" not in codes(prompt, still, "image-to-video")


def test_an_edit_that_keeps_a_thing_in_another_colour_than_the_image_contradicts_it():
    caption = "A beach at dusk under a pink and orange sky, with dark hills on the right."
    text = (
        "Turn the scene into a retro poster. Keep the beach, the hills and the sky in a deep blue."
    )
    assert (
        codes("make it a retro poster", text, "image-to-image", context=caption).get("color")
        == "contradiction"
    )
    kept = (
        "Turn the scene into a retro poster. Keep the beach, "
        "the hills and the sky in pink and orange."
    )
    assert "color" not in codes("make it a retro poster", kept, "image-to-image", context=caption)


@pytest.mark.parametrize(("code", "prompt", "text", "name"), NOT_JUDGED)
def test_what_the_newer_checks_leave_alone(code, prompt, text, name):
    assert code not in codes(prompt, text, name)


# -- the labelled pairs -------------------------------------------------------------------


def label_rows() -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(LABELS_DIR.glob("labels_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@lru_cache(maxsize=None)
def reference_lines(file: str) -> list[str]:
    return (SHARED_DATA / file).read_text(encoding="utf-8").splitlines()


def row_text(row: dict, field: str) -> str:
    """``prompt`` or ``output`` of a row, read from ../shared/data for reference rows."""
    if field in row:
        return row[field]
    ref = row[f"{field}_ref"]
    return reference_lines(ref["file"])[ref["line"] - 1]


def test_every_label_row_validates():
    rows = label_rows()
    assert len(rows) > 300
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    registry = default_registry()
    for row in rows:
        assert LABEL_FIELDS <= set(row), row["id"]
        assert row["label"] in ("accept", "reject"), row["id"]
        assert set(row["kinds"]) <= set(KINDS), row["id"]
        assert (row["kinds"] == []) == (row["label"] == "accept"), row["id"]
        registry.get(row["target"])
        for field in ("prompt", "output"):
            ref = row.get(f"{field}_ref")
            assert (field in row) != (ref is not None), (row["id"], field)
            if ref is not None:
                assert ref["file"].startswith("prompts/") and ref["line"] >= 1, row["id"]
                if SHARED_DATA.is_dir():
                    assert ref["line"] <= len(reference_lines(ref["file"])), row["id"]


def test_a_picture_word_in_the_output_adds_no_one():
    profile = default_registry().get("video")
    text = "The entire tableau exudes a quiet sense of peace around the old barn at dawn."
    assert "added_subject" not in assess("A tranquil tableau of barn", text, profile).kinds()
    assert (
        "added_subject"
        in assess("A tranquil tableau of barn", text + " A farmer waves.", profile).kinds()
    )


def test_the_prompts_own_past_tense_is_no_story():
    profile = default_registry().get("image")
    prompt = (
        "the lampposts were adorned with Art Deco motifs, their shapes and frosted glass glowing"
    )
    text = (
        f"{prompt[:1].upper()}{prompt[1:]}. Soft light from a window falls across the facades, "
        "and the frosted glass glows against a calm blue sky in clear contrast."
    )
    assert "form" not in assess(prompt, text, profile).kinds()
    story = text + " Then they faded and the street was dark."
    assert "the output tells a story in the past tense" in assess(prompt, story, profile).reasons()


def test_a_picture_word_of_the_prompt_need_not_be_kept():
    profile = default_registry().get("video")
    prompt = "an old red barn against the backdrop of the countryside"
    kept = "An old red barn stands weathered amid rolling countryside fields under a pale sky."
    assert "lost" not in assess(prompt, kept, profile).kinds()
    assert (
        "lost"
        in assess(
            prompt, "An old red shed stands amid rolling countryside fields.", profile
        ).kinds()
    )


def test_a_spelling_variant_keeps_the_thing():
    profile = default_registry().get("image")
    text = (
        "A white toilet stands beside a black hair dryer on a tiled counter, soft light, "
        "photograph."
    )
    assert "lost" not in assess("a toilet and a hair drier", text, profile).kinds()
    assert (
        "lost"
        in assess("a toilet and a hair drier", text.replace("hair dryer", "towel"), profile).kinds()
    )


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        # the first thing is not what the relation rests ("under", "holding a cup on a table",
        # "on the beach")
        (
            "a cat under a table",
            "A cat under a table sits on a soft rug by the window, its tail curled up.",
        ),
        (
            "a man holding a cup on a table",
            "A man holding a cup on a table sits on a wooden bench near the window.",
        ),
        (
            "a dog chasing a ball on the beach",
            "A dog chasing a ball on the beach stands on the wet sand at dawn.",
        ),
        (
            "a frog on the right of a couch",
            "A frog on the right of a couch sits on a pale leather couch in a bedroom.",
        ),
        # "them": both things, not the other one
        (
            "a lamp on the left of a sofa",
            "A tall lamp stands on the left of a grey sofa, a soft rug spread beneath them.",
        ),
        # another thing's turn, and a noun "swells"
        (
            "a leaf changes from green to red",
            "A leaf changes from green to red as the trail turns into a dark forest.",
        ),
        (
            "a ball changes from large to small",
            "A large ball changes from large to small as ocean swells roll behind it.",
        ),
        # a surreal photo may be realistic
        (
            "a surreal photo of a melting clock",
            "A surreal photo of a melting clock draped over a branch, realistic detail.",
        ),
        # "its" after another animal is that animal's; white with grey patches keeps white
        ("a white cat and a dog", "A white cat naps beside a dog. Its fur is grey and short."),
        (
            "a white cat on a sill",
            "A white cat sits on a sill. Its fur is white with grey patches.",
        ),
    ],
)
def test_read_from_review_no_finding_where_the_text_keeps_the_prompt(prompt, text):
    codes_found = set(codes(prompt, text))
    assert not codes_found & {
        "relation",
        "lost_relation",
        "change",
        "lost_change",
        "medium",
        "color",
    }, codes_found


def reject_scores(rows: list[dict]) -> tuple[float, float, float]:
    """Precision and recall of the assessment's rejects against the labels, and accuracy."""
    tp = fp = fn = tn = 0
    for row in rows:
        result = assess(
            row_text(row, "prompt"),
            row_text(row, "output"),
            profile(row["target"]),
            context=row.get("image"),
        )
        rejected, should = result.verdict == "fail", row["label"] == "reject"
        tp += rejected and should
        fp += rejected and not should
        fn += should and not rejected
        tn += not rejected and not should
    return (
        tp / (tp + fp) if tp + fp else 0.0,
        tp / (tp + fn) if tp + fn else 0.0,
        (tp + tn) / len(rows),
    )


LATER_BLIND_SETS = (
    "blind3",
    "blind4",
    "blind5",
    "blind6",
    "blind7",
    "blind8",
    "blind9",
    "blind10",
)  # promptx's own outputs, read blind


def test_labelled_pairs_precision_and_recall_of_reject():
    rows = label_rows()
    if any("prompt_ref" in row or "output_ref" in row for row in rows) and not SHARED_DATA.is_dir():
        pytest.skip(f"reference rows need {SHARED_DATA}")
    groups = {
        "calibration": [r for r in rows if not r["source"].startswith("blind")],
        "blind": [r for r in rows if r["source"] == "blind"],
        "blind2": [r for r in rows if r["source"] == "blind2"],
        "blind3": [r for r in rows if r["source"] == "blind3"],
        "blind4": [r for r in rows if r["source"] == "blind4"],
        "blind5": [r for r in rows if r["source"] == "blind5"],
        "blind6": [r for r in rows if r["source"] == "blind6"],
        "blind7": [r for r in rows if r["source"] == "blind7"],
        "blind8": [r for r in rows if r["source"] == "blind8"],
        "blind9": [r for r in rows if r["source"] == "blind9"],
        "blind10": [r for r in rows if r["source"] == "blind10"],
        "first 635": [r for r in rows if r["source"] not in LATER_BLIND_SETS],
        "all": rows,
    }
    scores = {name: reject_scores(group) for name, group in groups.items()}
    for name, (precision, recall, accuracy) in scores.items():
        print(
            f"\nfaithfulness labels, {name}: n={len(groups[name])} precision={precision:.3f} "
            f"recall={recall:.3f} accuracy={accuracy:.3f}"
        )
    # measured 2026-12-02 (precision / recall): calibration 0.952 / 0.932; blind 0.877 / 0.847 (it
    # was 0.71 / 0.71 before the fixes that reading it led to); blind2, measured once and never
    # tuned on, 0.765 / 0.830; all 635 0.905 / 0.899.
    # blind3 (2026-12-03): 121 outputs of promptx itself, every one of which had passed this check
    # when written (so its recall started at 0.000: 40 of 121 were labelled unfaithful); read
    # while adding the checks of that day, 0.625 / 0.250. Its floor guards those checks.
    # blind6 (2026-12-03, late): 119 outputs of the default pipeline, all passed by this check when
    # written (recall 0 by construction), 45 labelled unfaithful; read the same night:
    # 1.000 / 0.200.
    # blind7 (2026-12-03, night): before/after outputs of the change and camera-mend commits on 51
    # camera and change prompts, labelled blind together (43 of 102 unfaithful).
    # blind8 (2026-12-03, late night): 109 fresh prompts enhanced at 83a1946 and at b0f811b (124
    # distinct outputs), labelled blind together: 64 unfaithful, 8 of them flagged by the check of
    # b0f811b; read while adding the relation, shape, material, name and event checks of that night:
    # 19 of 64, 1 false alarm ("the elephants' bodies" of one elephant, labelled faithful).
    # blind9 (2026-12-04): 241 fresh t2v/t2i prompts enhanced as shipped and with the answer opened
    # by the prompt's words (474 distinct outputs, labelled blind by five helpers): 132 unfaithful,
    # 6 flagged by the check of 6e4e0cb (its fallbacks); read while adding the camera, colour,
    # medium, change and echo-relation checks of that morning: 0.958 / 0.174.
    # blind10 (2026-12-04, evening): 141 fresh t2v/t2i prompts enhanced by the adapter shipped until
    # then and by a 3-epoch tune (278 distinct outputs, five blind labellers): 98 unfaithful, the 3
    # fallbacks among them flagged: 1.000 / 0.031 when labelled (recall 0 otherwise by
    # construction); read the same evening (grey is not white, glazes, owned coverings,
    # "its fur"): 1.000 / 0.041.
    assert min(scores["calibration"][:2]) >= 0.9
    assert scores["blind10"][0] >= 0.9 and scores["blind10"][1] >= 0.04
    assert scores["blind9"][0] >= 0.9 and scores["blind9"][1] >= 0.12
    assert scores["blind6"][0] >= 0.9 and scores["blind6"][1] >= 0.15
    assert scores["blind8"][0] >= 0.9 and scores["blind8"][1] >= 0.2
    assert scores["first 635"][0] >= 0.9 and scores["first 635"][1] >= 0.88
    assert scores["blind3"][0] >= 0.55 and scores["blind3"][1] >= 0.2


def test_a_misspelt_word_or_a_name_beside_known_subjects_is_not_a_name_to_keep():
    assert (
        codes(
            "The camera orbits around. Loudsspeaker, the camera circles around.",
            "A black loudspeaker on a shelf as the camera slowly circles around it.",
        )
        == {}
    )
    assert (
        codes(
            "The camera orbits around. Fortre, the camera circles around.",  # kept inside a word
            "A stone fortress on a hill as the camera slowly circles around it.",
        )
        == {}
    )
    assert "lost_name" not in codes(
        "make this look like a Pixar movie: a grumpy old toaster",
        "A grumpy old toaster with a dented chrome body frowns on a kitchen counter.",
    )


def test_assessing_many_texts_in_a_row_completes():
    # throughput is measured elsewhere: the project forbids timed tests
    rows = [row for row in label_rows() if "prompt" in row][:50]
    results = [
        assess(row["prompt"], row["output"], profile(row["target"]), context=row.get("image"))
        for row in rows
    ]
    assert len(results) == 50
    assert all(r.verdict in ("pass", "fail") for r in results)


def test_a_chinese_prompt_keeps_its_subject_in_a_chinese_output():
    profile = default_registry().get("wan-t2v")
    kept = (
        "一只橘色的猫稳稳地站在滑板上，沿着阳光明媚的街道滑行，尾巴高高翘起，镜头低角度跟随拍摄，"
        "背景是两旁的商店橱窗和绿树，暖色调的午后光线洒在猫的毛发上，画面生动活泼，充满动感和趣味。"
    )
    lost = (
        "一只小狗在海边奔跑，阳光明媚，镜头缓缓推进，画面温暖柔和，细节丰富，背景是蓝色的大海和白色的沙滩，"
        "海浪轻轻拍打着岸边，远处的天空很蓝，整个画面充满了活力和自由的感觉，非常美丽动人。"
    )
    assert assess("一只猫在滑板上", kept, profile).passed
    assert "lost_subject" in {f.code for f in assess("一只猫在滑板上", lost, profile).findings}


def test_a_pronoun_brings_a_person_into_a_prompt_with_no_one_in_it():
    profile = default_registry().get("video")
    text = (
        "A quiet barn at dawn with hay bales stacked by the open doors and light falling across "
        "the dusty floor. She walks slowly between the stalls, brushing the wooden posts with her "
        "hand, as the camera follows from behind and pigeons settle on the beams above in warm "
        "golden light."
    )
    found = assess("a barn at dawn", text, profile).findings
    assert any(f.code == "added_person" and "she" in f.words for f in found)
    cat = text.replace("a barn", "a cat in a barn")
    assert not any(
        f.code == "added_person" for f in assess("a cat in a barn at dawn", cat, profile).findings
    )


def test_every_template_example_passes_the_assessment():
    # the few-shot examples are what the model imitates: one that adds a subject teaches it to
    registry = default_registry()
    failing = []
    for name in sorted(registry.names()):
        p = registry.get(name)
        for i, ex in enumerate(p.examples):
            verdict = assess(ex.input, ex.output, p, context=ex.image)
            if not verdict.passed:
                failing.append(f"{name} example {i}: {verdict.reasons()}")
    assert not failing, failing


@pytest.mark.parametrize(
    ("prompt", "text", "word"),
    [
        (
            "a truck on a mountain road",
            "A red truck climbs a mountain road; the driver leans out of the window.",
            None,
        ),
        (
            "a person is sailing",
            "A lone sailor steers a small boat across a calm lake at dawn.",
            None,
        ),
        (
            "a spaceship landing on mars",
            "A silver spaceship descends onto red dunes; the ship's engines flare.",
            None,
        ),
        (
            "two friends laughing at a cafe table",
            "Two friends laugh at a cafe table: a woman with curly hair "
            "and a bearded man in a denim shirt.",
            None,
        ),
        (
            "a woman reading in a garden",
            "A woman reads in a garden while a man waters the roses behind her.",
            "man",
        ),
        (
            "a rowboat on a lake",
            "A rowboat drifts on a calm lake, and a tiny figure stands by the oars.",
            "figure",
        ),
        (
            "a jellyfish in the ocean",
            "A jellyfish drifts in the deep ocean as schools of small fish dart around.",
            "fish",
        ),
        (
            "a castle on a hill",
            "A castle stands on a hill like a silent guardian over the valley.",
            None,
        ),
    ],
)
def test_who_a_prompt_licenses(prompt, text, word):
    found = assess(prompt, text, profile("image")).findings
    added = [w for f in found if f.kind == "added_subject" for w in f.words]
    assert added == ([word] if word else []), found


@pytest.mark.parametrize(
    ("target", "prompt", "text", "added"),
    [
        (
            "image-to-image",
            "make it winter",
            "Turn the scene into winter: cover the ground in snow and add a figure of a young "
            "woman in a red coat.",
            "figure",
        ),
        ("image-to-image", "make it sunny", "Make it sunny and place two dogs on the lawn.", "dog"),
        (
            "image-to-video",
            "the camera slowly pans right",
            "The camera slowly pans right as a man walks into the frame from the left.",
            "man",
        ),
        (
            "image-to-image",
            "make it winter",
            "Turn the scene into winter: cover the ground and rooftops in fresh snow, "
            "keep the composition.",
            None,
        ),
        (
            "image-to-image",
            "add a cat sitting nearby",
            "Add a small grey cat sitting near the bench.",
            None,
        ),
        (
            "image-to-image",
            "give him a hat",
            "Put the man in a wide straw hat, keep his face unchanged.",
            None,
        ),
        (
            "image-to-video",
            "the man turns his head",
            "The man turns his head slowly toward the window; the dog beside him appears calm.",
            None,
        ),
    ],
)
def test_an_unseen_image_may_hold_anything_but_the_text_may_not_add_to_it(
    target, prompt, text, added
):
    found = [
        w
        for f in assess(prompt, text, profile(target)).findings
        if f.kind == "added_subject"
        for w in f.words
    ]
    assert found == ([added] if added else [])


@pytest.mark.parametrize(
    ("prompt", "text", "clash"),
    [
        (
            "portrait of a woman with silver hair, studio light",
            "A portrait of a woman with silver hair under soft "
            "studio light, her dark hair cascading down her back like a waterfall of gold.",
            "hair",
        ),
        (
            "a red car on a street",
            "A red car parked on a wet street at night. The blue car gleams under neon signs.",
            "car",
        ),
        (
            "a red apple and a green apple on a table",
            "A red apple and a green apple sit side by side on a wooden "
            "table, the green apple slightly larger.",
            None,
        ),
        (
            "a green banana and a pink cake",
            "A green banana lies on a white cake stand next to a round pink cake.",
            None,
        ),
        (
            "a coffee mug floating in the sky",
            "A white ceramic mug floats in the sky among soft clouds.",
            None,
        ),
    ],
)
def test_a_noun_said_again_in_another_colour_contradicts_the_prompt(prompt, text, clash):
    found = [
        f.words[0]
        for f in assess(prompt, text, profile("image")).findings
        if f.kind == "contradiction"
    ]
    assert found == ([clash] if clash else [])


def test_word_salad_is_a_finding_and_the_prompts_own_words_are_not():
    video = default_registry().get("video")
    salad = (
        "A socks wide ended loaf of bread inside full boards fall threatening gray paws "
        "figurerounding attitude nondogaszpanska ref preaccerr atp attribution."
    )
    found = assess("a red fox in snow", salad, video)
    assert "word_salad" in [f.code for f in found.findings] and not found.passed
    names = "Hayao Miyazaki totoro ghibli kodama susuwatari"
    own = assess(
        names,
        f"{names} in a green forest clearing, soft morning light, gentle wind in the leaves.",
        video,
    )
    assert "word_salad" not in [f.code for f in own.findings]
