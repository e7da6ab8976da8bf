"""WordNet-derived word knowledge for the faithfulness assessment.

Reads ``data/lexicon.json.gz`` (made by ``tools/build_lexicon.py`` from
Princeton WordNet 3.1; its license is inside the file and in the data card)
once per process and answers: the noun lemma of a word, its senses (most
frequent first) and their hypernyms, whether a noun names a salient entity
(person, animal, vehicle, creature), colour families, derivational links and
whether one noun licenses another (synonym, more specific or more general
term, a gloss that names it, a derived form).

Not here: reading sentences (``mentions``) or judging a text (``assess``).
"""

from __future__ import annotations

import gzip
import json
import threading
from functools import lru_cache
from pathlib import Path

from promptx.data_cache import cached

__all__ = ["Lexicon", "lexicon"]

_DATA = Path(__file__).with_name("data") / "lexicon.json.gz"
# plural endings and what replaces them (WordNet's morphy rules for nouns)
_NOUN_SUFFIXES = (
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("s", ""),
)
_VERB_SUFFIXES = (
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("s", ""),
)
# camera words and words whose everyday use is not an entity, though WordNet's first sense is
# ("drone shot", "a joyful spirit", "inviting someone to sit")
NOT_SALIENT = frozenset(
    {
        "drone",
        "spirit",
        "soul",
        "someone",
        "somebody",
        "anyone",
        "anybody",
        "everyone",
        "everybody",
        "nobody",
        "self",
        "adult",
        "individual",
        "viewer",
        "observer",
        "onlooker",
        # rarer senses that outrank the everyday one in prompts: a car's hood,
        # a knot in wood, a toy balloon, a camera dolly and slider, "giant waves"
        "hood",
        "knot",
        "wag",
        "slider",
        "dolly",
        "giant",
        "balloon",
        "commuter",
        "sentinel",
        "guardian",
        "witness",
        "staff",
        # animal or vehicle senses listed beside a more common thing or phrase
        # ("in tandem", a cardigan, a snowflake, an anemone flower)
        "cardigan",
        "comma",
        "snowflake",
        "skate",
        "sub",
        "sierra",
        "union",
        "cairn",
        "anemone",
        "shire",
        "kaki",
        "gib",
        "billy",
        "pompon",
        "embryo",
        "pest",
        "infestation",
        "sticktight",
        "eggbeater",
        "skyhook",
        "four-in-hand",
        "pricket",
        "tandem",
        "solitaire",
        "smelt",
        "applecart",
        "bandwagon",
        "screenland",
        "filmdom",
        "secretariat",
        "copartnership",
        "flattop",
        # objects in prompts far more often than people or animals: a hat band,
        # a crystal tumbler, a door knocker, a mason jar, a 1950s diner, beef stew
        "band",
        "tumbler",
        "coaster",
        "club",
        "speaker",
        "controller",
        "knocker",
        "sucker",
        "batter",
        "core",
        "sharper",
        "pupil",
        "wingback",
        "diner",
        "breed",
        "mason",
        "beef",
        "shaker",
        "planter",
        "sleeper",
        "rounder",
        "cob",
        "modernist",
        "siren",
        "skimmer",
    }
)


# person words that say a sex: one never licenses a word of the other
_SEX = {
    **dict.fromkeys(
        "man boy guy gentleman male husband father son king prince grandfather "
        "uncle brother monk".split(),
        "m",
    ),
    **dict.fromkeys(
        "woman girl lady female wife mother daughter queen princess grandmother "
        "aunt sister nun".split(),
        "f",
    ),
}


class Lexicon:
    """Lookups over the shipped WordNet extract; build one with ``lexicon()``."""

    def __init__(self, data: dict) -> None:
        self._nouns: dict[str, list[int]] = data["nouns"]
        self._hypernyms: list[list[int]] = data["hypernyms"]
        self._lexnames: list[str] = data["lexnames"]
        self._noun_dominant = frozenset(data["noun_dominant"])
        self._verbs = frozenset(data["verbs"])
        self._verb_dominant = frozenset(data["verb_dominant"])
        self._other_words = frozenset(data["other_words"])
        self._salient: dict[str, str] = data["salient"]
        self._gloss: dict[str, list[str]] = data["gloss_words"]
        self._derived: dict[str, list[str]] = data["derived"]
        self.colors: dict[str, str] = data["colors"]
        self._exceptions: dict[str, str] = data["exceptions"]
        self.license: str = data["license"]
        self._forms: dict[str, str] | None = None

    # -- words -----------------------------------------------------------------------------
    def noun_lemma(self, word: str) -> str | None:
        """The noun lemma of ``word`` ("men" -> "man", "foxes" -> "fox"), None when not a noun."""
        word = word.lower()
        base = self._exceptions.get(word)
        if base in self._nouns:
            return base
        if word in self._nouns:
            return word
        return _strip_suffix(word, self._nouns, _NOUN_SUFFIXES)

    def verb_lemma(self, word: str) -> str | None:
        """The verb lemma of ``word`` ("skiing" -> "ski", "rode" -> "ride"), None when not a
        verb."""
        word = word.lower()
        if word in self._verbs:
            return word
        base = self._exceptions.get(word)
        if base in self._verbs:
            return base
        return _strip_suffix(word, self._verbs, _VERB_SUFFIXES, undouble=True)

    def is_noun(self, lemma: str) -> bool:
        """True for a noun lemma that is used mostly as a noun (not "run", "stop")."""
        return lemma in self._nouns and lemma in self._noun_dominant

    def is_modifier_word(self, word: str) -> bool:
        """An adjective or adverb the lexicon holds and not mostly a noun ("slender", "muddy",
        "clear", "high")."""
        noun = self.noun_lemma(word)
        return word in self._other_words and (noun is None or not self.is_noun(noun))

    def mostly_verb(self, lemma: str) -> bool:
        """A verb lemma used at least as often as a verb as a noun ("graze", "sit")."""
        return lemma in self._verb_dominant

    def knows(self, word: str) -> bool:
        """True when ``word`` is any English word the lexicon holds (noun, verb, adjective,
        adverb)."""
        w = word.lower()
        return bool(self.noun_lemma(w) or self.verb_lemma(w) or w in self._other_words)

    def lexname(self, lemma: str) -> str | None:
        """WordNet's lexicographer file of the first sense ("noun.animal", "noun.artifact")."""
        senses = self._nouns.get(lemma)
        return self._lexnames[senses[0]] if senses else None

    def lexnames(self, lemma: str, senses: int = 3) -> tuple[str, ...]:
        """The lexicographer files of the first ``senses`` senses, first sense first ("ring":
        noun.attribute, then noun.artifact)."""
        return tuple(self._lexnames[s] for s in self._nouns.get(lemma, [])[:senses])

    def salient_class(self, lemma: str) -> str | None:
        """ "person", "animal", "vehicle" or "creature" for a noun naming such an entity."""
        return None if lemma in NOT_SALIENT else self._salient.get(lemma)

    def salient_lemmas(self) -> dict[str, str]:
        """Every salient noun lemma and its class."""
        return {w: c for w, c in self._salient.items() if w not in NOT_SALIENT}

    def salient_forms(self) -> dict[str, str]:
        """Surface forms of the salient lemmas (lemma, plurals) -> lemma, for vocabulary scans."""
        if self._forms is None:
            forms = {}
            for lemma in self.salient_lemmas():
                for form in _plurals(lemma):
                    if self.noun_lemma(form) == lemma:
                        forms[form] = lemma
            forms.update(
                (w, b) for w, b in self._exceptions.items() if b in self._salient and w not in forms
            )
            self._forms = forms
        return self._forms

    def color_family(self, word: str) -> str | None:
        return self.colors.get(word.lower())

    # -- senses (memoized: the lexicon never changes once read; a request's constraint asks
    # about every salient lemma of the vocabulary, for each word of its prompt) ---------------
    @lru_cache(maxsize=None)
    def main_senses(self, lemma: str) -> tuple[int, ...]:
        """The senses of ``lemma`` that licensing considers: the first, and others in its
        lexicographer file (a cat the animal, not a cat the jazz fan)."""
        senses = self._nouns.get(lemma, [])
        if not senses:
            return ()
        first = self._lexnames[senses[0]]
        return tuple(s for i, s in enumerate(senses) if i == 0 or self._lexnames[s] == first)

    @lru_cache(maxsize=65536)
    def ancestors(self, sense: int) -> frozenset[int]:
        """``sense`` and all its hypernyms."""
        out = {sense}
        for parent in self._hypernyms[sense]:
            out |= self.ancestors(parent)
        return frozenset(out)

    @lru_cache(maxsize=1 << 18)
    def licenses(self, given: str, other: str) -> bool:
        """True when a prompt that names ``given`` allows a text to name ``other``: the same
        word, a synonym, a more specific or more general term (first senses), a group of the
        other's class ("crowd" -> "man"), or a gloss that names the other within one class
        ("kitten": "young domestic cat"). A man never stands for a woman, nor the reverse."""
        if given == other:
            return True
        if _SEX.get(given, _SEX.get(other)) != _SEX.get(other, _SEX.get(given)):
            return False  # woman's gloss says "(as opposed to a man)"
        a, b = self.main_senses(given), self.main_senses(other)
        if a and b:
            if a[0] in b or b[0] in a:  # synonyms
                return True
            if a[0] in self.ancestors(b[0]) or b[0] in self.ancestors(a[0]):
                return True
        cls = self.salient_class(other)
        if cls and cls == self._salient.get(given):  # a prompt's "band" still has musicians
            if self.lexname(given) == "noun.group":
                return True
            return (
                given in self._gloss.get(other, ())
                or other in self._gloss.get(given, ())
                or self._young_of(other, a)
            )
        return False

    def _young_of(self, other: str, given_senses: tuple[int, ...]) -> bool:
        """``other`` is the young of a kind ``given`` belongs to: "pup" ("a young dog") for a
        corgi."""
        gloss = self._gloss.get(other, ())
        if "young" not in gloss or not given_senses:
            return False
        above = self.ancestors(given_senses[0])
        return any(
            s in above for word in gloss if word not in _TOO_GENERAL for s in self.main_senses(word)
        )

    def hops_above(self, general: str, specific: str) -> int | None:
        """How many hypernym steps lead from ``specific``'s first sense up to ``general``'s, None
        when it is not above it."""
        a, b = self.main_senses(general), self.main_senses(specific)
        if not a or not b:
            return None
        frontier, hops = {b[0]}, 0
        while frontier and hops < 12:
            if a[0] in frontier:
                return hops
            frontier = {p for s in frontier for p in self._hypernyms[s]}
            hops += 1
        return None

    def more_general(self, general: str, specific: str) -> bool:
        """``general``'s first sense is a hypernym of ``specific``'s ("fish" of "shark")."""
        a, b = self.main_senses(general), self.main_senses(specific)
        return bool(a and b) and a[0] not in b and a[0] in self.ancestors(b[0])

    def gloss_names(self, lemma: str, given) -> bool:
        """True when the gloss of ``lemma``'s first sense names one of ``given`` (content words)."""
        return bool((set(self._gloss.get(lemma, ())) & set(given)) - _GLOSS_STOPWORDS)

    def agent_of(self, verb: str, other: str) -> bool:
        """True when ``other`` names who does ``verb`` ("ski" -> "skier", "ride" -> "rider")."""
        return verb in self._derived.get(other, ())

    def shares_a_sense(self, a: str, b: str) -> bool:
        """True when some sense of ``a`` is a sense of ``b``: spelling variants and synonyms
        outside the first senses ("drier" the appliance is "dryer")."""
        return bool(set(self._nouns.get(a, ())) & set(self._nouns.get(b, ())))

    @staticmethod
    def same_stem(given: str, other: str) -> bool:
        """One word's stem in the other ("skateboard", "skateboarding"; five letters at least)."""
        return (
            len(given) >= 5
            and len(other) >= 5
            and (given.startswith(other) or other.startswith(given))
        )

    def related(self, given: str, other: str, hops: int = 2) -> bool:
        """A looser match for things (not salient entities): first senses within ``hops``
        hypernym steps of a common ancestor ("ocean" and "sea"), or ``same_stem``."""
        if self.same_stem(given, other):
            return True
        a, b = self.main_senses(given), self.main_senses(other)
        if not a or not b:
            return False
        return bool(self._near(a[0], hops) & self._near(b[0], hops))

    def _near(self, sense: int, hops: int) -> set[int]:
        out, frontier = {sense}, {sense}
        for _ in range(hops):
            frontier = {p for s in frontier for p in self._hypernyms[s]}
            out |= frontier
        return out


def _strip_suffix(word: str, known, suffixes, *, undouble: bool = False) -> str | None:
    """The first ``known`` base left by replacing one of ``suffixes`` (WordNet's morphy);
    ``undouble`` also tries the base without a doubled last letter (running -> run)."""
    for suffix, repl in suffixes:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            base = word[: -len(suffix)] + repl
            if base in known:
                return base
            if undouble and len(base) > 2 and base[-1] == base[-2] and base[:-1] in known:
                return base[:-1]
    return None


def _plurals(lemma: str) -> tuple[str, ...]:
    out = [lemma, lemma + "s", lemma + "es"]
    if lemma.endswith("y"):
        out.append(lemma[:-1] + "ies")
    if lemma.endswith("man"):
        out.append(lemma[:-3] + "men")
    return tuple(out)


# "a young person" (kid) is no young of a girl: these say only the class
_TOO_GENERAL = frozenset(
    "young person people animal organism being creature individual mammal".split()
)
_GLOSS_STOPWORDS = frozenset(
    "a an the of or and in on to for with by as at from that which who is are".split()
)
_LOCK = threading.Lock()
_INSTANCE: Lexicon | None = None


def _read_lexicon() -> Lexicon:
    with gzip.open(_DATA, "rt", encoding="utf-8") as f:
        return Lexicon(json.load(f))


def lexicon() -> Lexicon:
    """The shared ``Lexicon``, loaded on first use (~0.3 s; a few ms from
    ``promptx.data_cache``)."""
    global _INSTANCE
    if _INSTANCE is None:
        with _LOCK:
            if _INSTANCE is None:
                _INSTANCE = cached("lexicon", [_DATA], _read_lexicon)
    return _INSTANCE
