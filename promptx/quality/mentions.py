"""Read an English text into noun mentions: lemma, colours, count, and how it is used.

A mention is one noun occurrence with what stands right before it in its
phrase ("three red apples": apple, count 3, colours {red}, materials; "several
glasses": a vague count), whether it only modifies a following noun ("dog bed",
"cat food"), whether it is depicted or otherwise not in the scene ("a statue of
a man", "built by a craftsman", "inspired artists") and whether it stands
inside quotes.
Lexical facts come from ``lexicon``. Not here: any judgement (``assess``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .lexicon import Lexicon

__all__ = ["PICTURE_WORDS", "Mention", "Word", "absent_at", "depicted_at", "mentions", "same_material", "words"]

# nouns that describe the picture, not what is in it
PICTURE_WORDS = frozenset("""photo photograph picture image shot scene video clip footage view frame
    still camera lens style background foreground closeup close-up angle render painting drawing
    illustration art artwork portrait landscape wallpaper time lapse timelapse motion quality detail
    light lighting color colour side top front bottom left right middle center centre home tableau""".split())

# a run of letters and digits with a digit after a letter ("#20B2AA", "B2") is one word, not a
# count ("1girl", "3 apples" still count)
_TOKEN = re.compile(r"(?:\d*[^\W\d_]+\d)[^\W_]*|[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+|[.!?;:,()\"“”«»]")
_PHRASE_END = frozenset(".!?;:,()")
_QUOTE_CHARS = frozenset("\"“”«»")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "single": 1, "lone": 1, "sole": 1,
            "solitary": 1, "twin": 2, "dozen": 12, "a": 1, "an": 1}
_GROUP_COUNTS = {"pair": 2, "couple": 2, "trio": 3, "quartet": 4, "dozen": 12}
# quantities without a number: "several glasses" keeps the glasses but not "four"
_VAGUE_COUNTS = frozenset("several many some few numerous multiple countless various dozens".split())
# materials, by family: "a wooden sailboat" is not kept by "a fiberglass sailboat"; a generic
# word ("metal") keeps every member of its family
MATERIALS = {
    "wood": "wood wooden timber oak oaken pine walnut mahogany teak cedar birch maple driftwood plywood",
    "metal": "metal metallic iron wrought-iron cast-iron steel stainless bronze brass copper tin aluminum "
             "aluminium chrome chromed pewter",
    "stone": "stone marble granite limestone sandstone slate cobblestone concrete",
    "glass": "glass crystal",
    "plastic": "plastic acrylic vinyl",
    "fiberglass": "fiberglass fibreglass",
    "ceramic": "ceramic porcelain clay terracotta earthenware stoneware",
    "leather": "leather suede",
    "fabric": "fabric cloth cotton wool woolen woollen silk silken velvet linen denim satin knitted",
    "paper": "paper cardboard",
    "wicker": "wicker rattan",
    "bamboo": "bamboo",
    "ice": "ice",
}
_MATERIAL_FAMILY = {w: family for family, ws in MATERIALS.items() for w in ws.split()}
# the metals are told apart, but "metal" keeps any of them
_METALS = frozenset("iron wrought-iron cast-iron steel stainless bronze brass copper tin aluminum aluminium "
                    "chrome chromed pewter".split())
# words that may stand between a count or colour and its noun ("three small red apples")
_FILLER = frozenset("""small large big tiny little huge giant tall short old young new fluffy shiny
    round square bright dark light pale deep vivid fresh ripe wooden metal glass plastic stone
    striped spotted furry cute happy sleek vintage modern ancient wild baby adult and or the of
    very fat thin long curly straight wet dry""".split())
# colour words WordNet files as adjectives, with their family
_COLOR_ADJECTIVES = {"golden": "yellow", "blond": "yellow", "blonde": "yellow", "silvery": "grey",
                     "reddish": "red", "bluish": "blue", "greenish": "green", "yellowish": "yellow",
                     "pinkish": "pink", "purplish": "purple", "brownish": "brown", "blackish": "black",
                     "whitish": "white", "grayish": "grey", "greyish": "grey", "orangish": "orange",
                     "brunette": "brown", "auburn": "red", "ginger": "orange", "platinum": "grey",
                     "raven": "black", "jet": "black", "dark": "dark"}
_FUNCTION_WORDS = frozenset("""at in on of to by for with from as is are was were and or but a an the
    it its his her their this that""".split())
_DETERMINERS = frozenset("a an the this that its his her their every each".split())
# what a depicted mention stands after: "a statue of a man", "a painting of two horses"
_DEPICTIONS = frozenset("""statue sculpture painting portrait drawing sketch carving figurine mural
    poster photo photograph picture image silhouette reflection shadow toy doll logo icon emblem
    tattoo engraving print illustration model replica cutout""".split())
# a likeness, not a presence: "like a sentinel", "stands as a silent guardian", "resembling a dancer"
_LIKENESS = frozenset("like resembling resemble resembles unlike".split())
_SIMILE_FILLERS = frozenset("""silent lone single giant tiny little proud ancient watchful patient
    faithful loyal old great small""".split())
# "stands sentinel": a role word right after these verbs is not a person in the scene
_STAND_AS_ROLE = frozenset("stand stands standing stood".split())
# "stands as", "serves as", "acts as" a role
_ROLE_VERBS = frozenset("stand stands standing serve serves serving act acts acting".split())
# "motion that suits the scene": after these a word ending in -s is a verb
_RELATIVES = frozenset("that which who".split())
# verbs whose spelling is also a plural noun ("does" -> doe)
_AUXILIARIES = frozenset("does".split())
# words before a noun that make it an object, not a living subject ("plush animals")
_DEPICTING_ADJECTIVES = frozenset("""plush stuffed toy paper origami inflatable cardboard carved
    painted printed embroidered cartoon""".split())
# in the scene's making or its audience, not in the scene: "built by a craftsman",
# "inspired countless artists", "inviting someone to sit", "the Parthenon's creators"
_MAKING = frozenset("""made built crafted carved designed painted created constructed erected sculpted
    handcrafted forged woven commissioned transformed shaped drawn sketched""".split())
_AUDIENCE = frozenset("""inspire inspires inspired inspiring invite invites invited inviting captivate
    captivates captivated captivating beckon beckons beckoning enchant enchants enchanted
    enchanting""".split())
_QUANTIFIERS = frozenset("""countless many numerous all generations of various millions thousands
    hundreds""".split())
# heads of an "of" phrase that is not a place in the scene: "the artistry of the baker"
_ABSTRACT = frozenset({"noun.cognition", "noun.act", "noun.attribute", "noun.communication",
                       "noun.feeling", "noun.state", "noun.possession", "noun.motive", "noun.time"})
# a group word before "of" makes its members many: "a pod of dolphins", "schools of fish"
GROUP_WORDS = frozenset("""pod school shoal flock herd swarm pack troop colony gaggle group crowd
    bunch band horde throng cluster litter brood""".split())
# script names before "characters": writing, not people ("signs in Chinese characters")
_SCRIPTS = frozenset("""chinese japanese korean latin greek arabic cyrillic hebrew kanji hanzi
    gothic runic bold handwritten painted carved""".split())
# a heard, not seen, mention: "birds chirp in the distance"
_SOUNDS = frozenset("""chirp chirps chirping sing sings singing hoot hoots hooting howl howls
    howling bark barks barking tweet tweets tweeting caw caws cawing croak croaks croaking buzz
    buzzes buzzing call calls calling song songs sound sounds cry cries""".split())


@dataclass(frozen=True)
class Word:
    text: str          # lower case, possessive 's removed
    raw: str
    phrase: int        # index of the phrase (between punctuation marks)
    quoted: bool


@dataclass(frozen=True)
class Mention:
    lemma: str
    position: int                  # index into ``words``
    colors: frozenset[str]         # colour families of the words before it in its phrase
    count: int | None              # an explicit number before it (1 for "a"/"single")
    modifier: bool                 # it modifies the next noun ("dog bed", "bird's-eye")
    depicted: bool                 # "a statue of a man", "built by a craftsman": not in the scene
    quoted: bool
    vague: bool = False            # "several", "many": a quantity without a number
    materials: frozenset[str] = frozenset()    # material words before it ("wooden", "marble")
    many: bool = False             # plural, or the members of a group ("a pod of dolphins")


def words(text: str) -> list[Word]:
    """The words of ``text`` in order (punctuation only moves the phrase counter)."""
    out: list[Word] = []
    phrase, quoted = 0, False
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    for raw in _TOKEN.findall(plain):
        if raw in _QUOTE_CHARS:
            quoted = not quoted if raw == '"' else raw in "“«"
            phrase += 1
            continue
        if raw in _PHRASE_END:
            phrase += 1
            continue
        low = raw.lower().replace("’", "'")
        if low.endswith("'s"):
            low = low[:-2]
        out.append(Word(low, raw, phrase, quoted))
    return out


def color_of(word: str, lex: Lexicon) -> str | None:
    """The colour family a word names; a compound names its last colour ("cobalt-blue")."""
    if "-" in word:
        return next((c for c in (color_of(p, lex) for p in reversed(word.split("-"))) if c), None)
    return _COLOR_ADJECTIVES.get(word) or lex.color_family(word)


def mentions(ws: list[Word], lex: Lexicon) -> list[Mention]:
    """Noun mentions of ``ws`` (nouns used mostly as nouns, colours excluded)."""
    out: list[Mention] = []
    for i, w in enumerate(ws):
        lemma = lex.noun_lemma(w.text)
        after_article = i > 0 and ws[i - 1].text in ("a", "an") and bool(lex.salient_class(lemma or ""))
        if (lemma is None or not (lex.is_noun(lemma) or after_article) or color_of(w.text, lex)
                or w.text in _NUMBERS or w.text in _AUXILIARIES):
            continue                   # a word used mostly as a verb is a noun after "a": "a cook"
        if w.text.endswith("ing") and lex.verb_lemma(w.text) and not (i and ws[i - 1].text in _DETERMINERS):
            continue                   # "storm clouds gathering": a verb, not "a gathering"
        if i and ws[i - 1].text in _RELATIVES and w.text.endswith("s") and lex.verb_lemma(w.text):
            continue                   # "motion that suits the scene": a verb
        if i + 1 < len(ws) and ws[i + 1].text == "of" and (
                lemma in _GROUP_COUNTS or lemma in GROUP_WORDS or lex.lexname(lemma) == "noun.group"):
            continue                   # "a couple of tents", "a gathering of clouds": see the members
        if i and ws[i - 1].text == "to" and w.text == lex.verb_lemma(w.text) and lex.salient_class(lemma) \
                and not (i > 1 and ws[i - 2].text in _NEXT_TO):
            continue                   # "pauses to bat at a toy": a verb
        colors, count, vague, materials = _modifiers(ws, i, lex)
        many = (w.text != lemma and not w.text.endswith(("ed", "ing"))) or _group_member(ws, i, lex)
        out.append(Mention(lemma, i, frozenset(colors), count, _is_modifier(ws, i, lex),
                           depicted_at(ws, i, lex), w.quoted, vague,
                           frozenset(materials), many))
    return out


_NEXT_TO = frozenset("next close according up due thanks similar compared".split())
# words before a number that make it a part of the whole: "the other five friends"
_SUBSET = frozenset("other remaining last first next another".split())
_PREPOSITIONS = frozenset("""along across around behind beside besides between beyond over under
    through throughout toward towards into onto upon within without near above below beneath past off
    out up down about after before against among inside outside via underneath amid amidst""".split())


def _group_member(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """"a pod of dolphins", "schools of colorful fish": one of many."""
    for j in range(i - 1, max(0, i - 4), -1):
        if ws[j].phrase != ws[i].phrase:
            return False
        if ws[j].text == "of":
            head = lex.noun_lemma(ws[j - 1].text)
            return ws[j - 1].text in GROUP_WORDS or head in GROUP_WORDS
        if not _describes(ws[j].text, lex):
            return False
    return False


def same_material(given: str, other: str) -> bool:
    """``other`` keeps the material word ``given``: the same family, and for metals the same
    metal unless one side says only "metal"."""
    if _MATERIAL_FAMILY.get(given) != _MATERIAL_FAMILY.get(other):
        return False
    if given in _METALS and other in _METALS:
        return given == other or {given, other} <= {"iron", "wrought-iron", "cast-iron", "steel", "stainless"} \
            or {given, other} <= {"chrome", "chromed"}
    return True


def _modifiers(ws: list[Word], i: int, lex: Lexicon) -> tuple[set[str], int | None, bool, set[str]]:
    """Colours, count, a vague quantity and materials said before the noun at ``i``, walking
    back over adjectives and compound nouns ("seven slender striped candles", "a single red
    high heel shoe")."""
    colors: set[str] = set()
    materials: set[str] = set()
    count, vague, compound = None, False, True
    j = i - 1
    while j >= 0 and i - j <= 5 and ws[j].phrase == ws[i].phrase:
        t = ws[j].text
        family = color_of(t, lex)
        if t in _MATERIAL_FAMILY:
            materials.add(t)
        elif family:
            colors.add(family)
        elif t in _NUMBERS or t.isdigit():
            subset = j and ws[j - 1].text in _SUBSET          # "the other five friends": some of them
            count = None if subset else int(t) if t.isdigit() else _NUMBERS[t]
            break
        elif t == "of" and j >= 1 and ws[j - 1].text in _GROUP_COUNTS:
            count = _GROUP_COUNTS[ws[j - 1].text]
            break
        elif t in _VAGUE_COUNTS:
            vague = True
            break
        elif not _describes(t, lex, compound=compound):
            break
        compound = compound and _compound_noun(t, lex)
        j -= 1
    return colors, count, vague, materials


def _describes(word: str, lex: Lexicon, *, compound: bool = False) -> bool:
    """A word that may stand between a count and its noun: a known filler, a participle in
    -ed, an adjective, or (``compound``: only nouns stand between it and the head) a singular
    noun used as a modifier ("heel" in "a single red high heel shoe")."""
    if word in _FILLER or word.endswith(("-colored", "-coloured", "ed")):
        return True
    if word in _NUMBERS or word in _FUNCTION_WORDS or word in _PREPOSITIONS or word.endswith("ing"):
        return False
    if lex.is_modifier_word(word):
        return True
    return compound and _compound_noun(word, lex)


def _compound_noun(word: str, lex: Lexicon) -> bool:
    noun = lex.noun_lemma(word)
    return noun == word and lex.is_noun(noun) and not lex.mostly_verb(noun)


def _is_modifier(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """It modifies the next noun ("dog bed", "fish patterns") or is only heard ("birds chirp")."""
    if i + 1 >= len(ws) or ws[i + 1].phrase != ws[i].phrase:
        return False
    nxt = ws[i + 1].text
    if nxt.startswith(("eye", "-eye")) or nxt in _SOUNDS or nxt.startswith("song"):
        return True                                   # bird's eye view, birdsong
    if nxt.endswith(("ing", "ed")):
        return False                                  # "a person wearing", "a dog chased"
    if nxt in _FUNCTION_WORDS:
        return False                                  # "a lighthouse at dusk"
    lemma = lex.noun_lemma(nxt)
    verb = lex.verb_lemma(nxt)
    if verb and nxt.endswith("s") and i and ws[i - 1].text in ("a", "an", "one"):
        return False                                  # "a man waters the roses": its verb
    possessive = ws[i].raw.lower().endswith(("'s", "’s", "s'"))
    if verb and ws[i].text.endswith("s") and lex.noun_lemma(ws[i].text) != ws[i].text and not possessive:
        return False                                  # "a pod of dolphins arcs": plurals rarely modify
    return bool(lemma and lex.is_noun(lemma) and not (verb and lex.mostly_verb(verb)))


def depicted_at(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """The word at ``i`` is pictured, figurative or names someone outside the scene."""
    return _is_depicted(ws, i) or absent_at(ws, i, lex)


def _is_depicted(ws: list[Word], i: int) -> bool:
    """A picture of it, a toy of it, or a figure of speech: "like a guardian", "stands sentinel"."""
    if i and ws[i - 1].text in _DEPICTING_ADJECTIVES:
        return True
    if ws[i].text in ("character", "characters") and i and ws[i - 1].text in _SCRIPTS:
        return True                                   # "signs in Chinese characters": writing
    for j in range(max(0, i - 3), i):
        if ws[j].text == "of" and (j >= 1 and ws[j - 1].text in _DEPICTIONS
                                   or j >= 2 and ws[j - 2].text in _DEPICTIONS):
            return True                               # "a photograph above, of two friends"
        likeness = ws[j].text in _LIKENESS or (ws[j].text == "as" and j and ws[j - 1].text in _ROLE_VERBS)
        if likeness and all(w.text in _DETERMINERS or w.text in _SIMILE_FILLERS for w in ws[j + 1:i]):
            return True
    return i > 0 and ws[i - 1].text in _STAND_AS_ROLE



def absent_at(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """The word at ``i`` names someone outside the scene: the maker ("carved by a craftsman",
    "the Parthenon's creators"), an audience ("inspired countless artists", "inviting someone
    to sit"), or the owner of an abstract thing ("the artistry of the baker", "the imagination
    of people"); later items of a list ("artists, poets and writers") follow its first."""
    start = _list_start(ws, i)
    if start != i:
        return absent_at(ws, start, lex)
    if i > 1 and ws[i - 1].text in ("and", "or") and ws[i - 2].phrase == ws[i].phrase \
            and lex.noun_lemma(ws[i - 2].text):
        return absent_at(ws, i - 2, lex)              # "inspired artists and architects"
    if _hypothetical(ws, i):
        return True                                   # "as if someone is about to sit"
    owner = _before_adjectives(ws, i, lex)
    if owner is not None and ws[owner].raw.lower().endswith(("'s", "’s")) \
            and not lex.salient_class(lex.noun_lemma(ws[owner].text) or ""):
        return True                                   # "the temple's creators", "the tower's lone inhabitant"
    compound = True
    for j in range(i - 1, max(-1, i - 5), -1):
        t = ws[j].text
        if ws[j].phrase != ws[i].phrase:
            break
        if t in _AUDIENCE:
            return True
        if t == "by":
            return any(w.text in _MAKING for w in ws[max(0, j - 6): j])
        if t == "of" and j:
            if ws[j - 1].text in _SOUNDS:
                return True                           # "the distant chirping of birds": heard
            head_noun = lex.noun_lemma(ws[j - 1].text)       # "full of creatures": no head noun
            return bool(head_noun) and lex.is_noun(head_noun) and lex.lexname(head_noun) in _ABSTRACT
        if t not in _DETERMINERS and t not in _QUANTIFIERS and not _describes(t, lex, compound=compound):
            break
        compound = compound and _compound_noun(t, lex)
    return False


def _hypothetical(ws: list[Word], i: int) -> bool:
    """Inside "as if ..." or "as though ...", in the same sentence part."""
    for j in range(i - 1, max(0, i - 8), -1):
        if ws[j].phrase != ws[i].phrase:
            return False
        if ws[j].text in ("if", "though") and ws[j - 1].text == "as":
            return True
    return False


def _before_adjectives(ws: list[Word], i: int, lex: Lexicon) -> int | None:
    """The index of the word before the adjectives in front of ``ws[i]`` (same phrase)."""
    j = i - 1
    while j >= 0 and ws[j].phrase == ws[i].phrase and lex.is_modifier_word(ws[j].text):
        j -= 1
    return j if j >= 0 and ws[j].phrase == ws[i].phrase else None


def _list_start(ws: list[Word], i: int) -> int:
    """The first item of the comma list that ``ws[i]`` belongs to ("inspired artists, poets,
    and writers": "artists"); ``i`` itself when it is no later item of a list. A later item
    fills its phrase alone (after "and"/"or")."""
    if i + 1 < len(ws) and ws[i + 1].phrase == ws[i].phrase and ws[i + 1].text not in ("and", "or"):
        return i
    start = i
    while True:
        k = start - 1
        if k >= 0 and ws[k].text in ("and", "or") and ws[k].phrase == ws[start].phrase:
            k -= 1
        if k < 0 or ws[k].phrase == ws[start].phrase:
            return start
        start = k
        if k == 0 or ws[k - 1].phrase == ws[k].phrase:
            return start                              # words before it in its phrase: the first item
