"""Which salient entities a prompt licenses: the ones it names, more specific or more
general terms for them, members of its groups, agents of its activities, and the
anonymous background people or traffic its places imply.

Shared by the assessment (``assess``) and the decoding constraint (``constraint``),
so that what decoding forbids is exactly what the assessment would reject.
Not here: finding mentions in an output (``mentions``).
"""

from __future__ import annotations

from dataclasses import dataclass

from promptx.cleanup import STOPWORDS

from .lexicon import Lexicon
from .mentions import PICTURE_WORDS, words

__all__ = ["PERSON_PRONOUNS", "Licence"]

# pronouns that bring a person into a prompt that has no one to refer to
PERSON_PRONOUNS = frozenset("he she him her his hers himself herself".split())
# places whose pictures have anonymous people in them ("a busy street" -> passers-by)
PEOPLE_PLACES = frozenset("""street road city town village market marketplace bazaar square plaza
    festival concert party parade station platform airport mall shop store stadium arena restaurant
    cafe bar pub club office classroom school campus beach park playground pool gym crowd downtown
    sidewalk alley harbor harbour port pier boardwalk fair carnival museum gallery library church
    temple wedding game match race raceway theater theatre cinema subway metro train bus ferry
    crosswalk intersection avenue boulevard nightclub casino courtyard""".split())
# places whose pictures have anonymous traffic in them ("a highway" -> cars)
TRAFFIC_PLACES = frozenset("""street road highway freeway motorway city town intersection traffic
    downtown avenue boulevard bridge parking crossing crosswalk harbor harbour port marina canal
    river pier tunnel""".split())
# anonymous background words that a people place licenses even in the singular
BACKGROUND_PEOPLE = frozenset("""people crowd pedestrian passerby passer-by commuter shopper
    tourist visitor patron customer spectator audience onlooker bystander traveler traveller
    figure""".split())
BACKGROUND_TRAFFIC = frozenset("car traffic vehicle bus taxi cab boat".split())
# what a text may call a subject the lexicon does not know ("Gwen Stacy", "a bigfoot")
CLASS_WORDS = frozenset("""person man woman girl boy lady guy child creature animal beast being
    character figure""".split())
# what a text may call a subject the prompt has ("a bigfoot" -> "the creature"); never a new one
DESCRIPTORS = frozenset("creature being beast figure character".split())


@dataclass(frozen=True)
class Licence:
    """The words a prompt (and the caption of its image) stand for."""

    given: frozenset[str]        # words and noun lemmas of the prompt and caption
    activities: frozenset[str]   # verb lemmas of its inflected verbs ("skiing" -> "ski")
    people_place: bool
    traffic_place: bool
    unknown_subject: bool        # a full name ("Gwen Stacy") or a word the lexicon does not know
    has_subject: bool            # it names a salient entity

    @property
    def animate(self) -> bool:
        """Someone may be called "she" or "he": a person, animal, creature, name or busy place."""
        return self.has_subject or self.unknown_subject or self.people_place

    @classmethod
    def of(cls, prompt: str, context: str | None, lex: Lexicon) -> "Licence":
        given: set[str] = set()
        activities: set[str] = set()
        unknown = False
        ws = words(f"{prompt} . {context or ''}")
        for i, w in enumerate(ws):
            if w.text in STOPWORDS or (w.text in PICTURE_WORDS and not w.text.endswith("ing")):
                continue                   # "a tableau", "a still frame" license no one ("painting" may)
            given.add(w.text)
            noun, verb = lex.noun_lemma(w.text), lex.verb_lemma(w.text)
            if noun:
                given.add(noun)
            if verb and (verb != w.text or not noun):
                activities.add(verb)
            named = (i + 1 < len(ws) and w.raw[:1].isupper() and ws[i + 1].raw[:1].isupper()
                     and not noun and not lex.noun_lemma(ws[i + 1].text))      # "Gwen Stacy"
            unknown = unknown or named or (not lex.knows(w.text) and w.text not in STOPWORDS and len(w.text) > 2)
        has_subject = any(lex.salient_class(g) for g in given)
        return cls(frozenset(given), frozenset(activities), bool(given & PEOPLE_PLACES),
                   bool(given & TRAFFIC_PLACES), unknown, has_subject)

    def allows(self, lemma: str, lex: Lexicon, *, plural: bool = False) -> bool:
        """True when an output may name ``lemma`` (a salient noun lemma)."""
        if lemma in self.given or any(lex.licenses(g, lemma) for g in self.given):
            return True
        if any(lex.agent_of(v, lemma) for v in self.activities):
            return True
        if (self.unknown_subject and lemma in CLASS_WORDS) or (self.has_subject and lemma in DESCRIPTORS):
            return True
        doing = {w for w in self.given if w.endswith("ing")} | self.activities
        if lex.salient_class(lemma) == "vehicle" and lex.gloss_names(lemma, doing):
            return True                                   # sailing -> "a small sailing vessel"
        cls = lex.salient_class(lemma)
        if cls == "person" and self.people_place:
            return plural or lemma in BACKGROUND_PEOPLE
        if cls == "vehicle" and self.traffic_place:
            return plural or lemma in BACKGROUND_TRAFFIC
        return False
