"""Materials by family: "a wooden sailboat" is not kept by "a fiberglass sailboat".

A generic word ("metal") keeps every member of its family; the metals themselves are told
apart (bronze is not iron). Not here: where a material is said (``mentions``) or judged
(``attributes``).
"""

from __future__ import annotations

__all__ = ["MATERIALS", "is_material", "same_material"]

MATERIALS = {
    "wood": "wood wooden timber oak oaken pine walnut mahogany teak cedar birch maple "
    "driftwood plywood",
    "metal": "metal metallic iron wrought-iron cast-iron steel stainless bronze brass copper tin "
    "aluminum aluminium chrome chromed pewter",
    "stone": "stone marble granite limestone sandstone slate cobblestone cobbled cobble concrete",
    "glass": "glass crystal",
    "plastic": "plastic acrylic vinyl",
    "fiberglass": "fiberglass fibreglass",
    "ceramic": "ceramic porcelain clay terracotta earthenware stoneware",
    "leather": "leather suede",
    "fabric": "fabric cloth cotton wool woolen woollen silk silken velvet linen denim satin "
    "knitted",
    "paper": "paper cardboard",
    "wicker": "wicker rattan",
    "bamboo": "bamboo",
    "ice": "ice",
    "rubber": "rubber latex",
}
_MATERIAL_FAMILY = {w: family for family, ws in MATERIALS.items() for w in ws.split()}
# the metals are told apart, but "metal" keeps any of them
_METALS = frozenset(
    "iron wrought-iron cast-iron steel stainless bronze brass copper tin aluminum aluminium "
    "chrome chromed pewter".split()
)


def is_material(word: str) -> bool:
    return word in _MATERIAL_FAMILY


def same_material(given: str, other: str) -> bool:
    """``other`` keeps the material word ``given``: the same family, and for metals the same
    metal unless one side says only "metal"."""
    if _MATERIAL_FAMILY.get(given) != _MATERIAL_FAMILY.get(other):
        return False
    if given in _METALS and other in _METALS:
        return (
            given == other
            or {given, other} <= {"iron", "wrought-iron", "cast-iron", "steel", "stainless"}
            or {given, other} <= {"chrome", "chromed"}
        )
    return True
