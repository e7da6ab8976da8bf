"""Which salient entities a prompt licenses: the ones it names, more specific or more
general terms for them, members of its groups, agents of its activities, and the
anonymous background people or traffic its places imply.

Shared by the assessment (``assess``) and the decoding constraint (``constraint``),
so that what decoding forbids is exactly what the assessment would reject.
Not here: finding mentions in an output (``mentions``).
"""

from __future__ import annotations

from dataclasses import dataclass

from promptx.text.cleanup import STOPWORDS

from .lexicon import NOT_SALIENT, Lexicon
from .mentions import PICTURE_WORDS
from .words import words

__all__ = ["PERSON_PRONOUNS", "Licence"]

# pronouns that bring a person into a prompt that has no one to refer to
PERSON_PRONOUNS = frozenset(
    """he she him her his hers himself herself someone somebody anyone
    anybody everyone everybody""".split()
)
# places whose pictures have anonymous people in them ("a busy street" -> passers-by)
PEOPLE_PLACES = frozenset(
    """street road city town village market marketplace bazaar square plaza
    festival concert party parade station platform airport mall shop store stadium arena restaurant
    cafe bar pub club office classroom school campus beach park playground pool gym crowd downtown
    sidewalk alley harbor harbour port pier boardwalk fair carnival museum gallery library church
    temple wedding game match race raceway theater theatre cinema subway metro train bus ferry
    crosswalk intersection avenue boulevard nightclub casino courtyard promenade waterfront bund
    esplanade embankment""".split()
)
# places whose pictures have anonymous traffic in them ("a highway" -> cars)
TRAFFIC_PLACES = frozenset(
    """street road highway freeway motorway city town intersection traffic
    downtown avenue boulevard bridge parking crossing crosswalk harbor harbour port marina canal
    river pier tunnel waterfront bund""".split()
)
# anonymous background words that a people place licenses even in the singular
BACKGROUND_PEOPLE = frozenset(
    """people crowd pedestrian passerby passer-by commuter shopper
    tourist visitor patron customer spectator audience onlooker bystander traveler traveller
    vendor merchant seller stallholder guest diner""".split()
)
BACKGROUND_TRAFFIC = frozenset("car traffic vehicle bus taxi cab boat".split())
# background people a people place has only as an anonymous plural ("children", never "a child")
BACKGROUND_PLURAL = frozenset("child kid family".split())
# person words an animal uses of its own kind ("its companions", "a member of the herd")
KIN = frozenset("companion member friend mate partner family sibling".split())
# a prompt in the first person has a person: "I" may become "a young woman"
FIRST_PERSON = frozenset("i me my myself".split())
# who works a vehicle ("a truck" -> "the driver"), and which vehicle a role or an activity
# brings ("a sailor", "sailing" -> "the boat"): WordNet links neither way
CREW = {
    "driver": "car truck bus taxi cab van tractor train tram lorry jeep",
    "rider": "horse bicycle bike motorcycle motorbike scooter",
    "cyclist": "bicycle bike",
    "biker": "bicycle bike motorcycle motorbike",
    "motorcyclist": "motorcycle motorbike",
    "jockey": "horse",
    "sailor": "boat ship sailboat yacht",
    "captain": "boat ship yacht",
    "pilot": "airplane plane aircraft jet helicopter",
    "astronaut": "spacecraft spaceship rocket",
    "fisherman": "boat",
    "passenger": "train bus boat ferry ship airplane plane tram subway metro coach",
}
VEHICLE_OF = {
    "sail": "boat sailboat yacht ship",
    "row": "boat rowboat canoe",
    "paddle": "canoe kayak boat",
    "drive": "car truck",
    "cycle": "bicycle bike",
    "ride": "horse bicycle bike",
}
# the parts of a vehicle that are vehicles themselves in WordNet ("a train" -> "the carriage")
PARTS_OF = {
    "train": "carriage car coach wagon railcar locomotive engine caboose",
    "subway": "carriage car coach railcar",
    "metro": "carriage car coach railcar",
    "tram": "carriage car",
    "trolley": "car",
}
_VEHICLES_OF_ROLE = {role: frozenset(vehicles.split()) for role, vehicles in CREW.items()}
_ROLES_OF_VEHICLE = {
    vehicle: frozenset(r for r, vs in _VEHICLES_OF_ROLE.items() if vehicle in vs)
    for vs in _VEHICLES_OF_ROLE.values()
    for vehicle in vs
}
_VEHICLES_OF_ACTIVITY = {verb: frozenset(vehicles.split()) for verb, vehicles in VEHICLE_OF.items()}
_PARTS = {whole: frozenset(parts.split()) for whole, parts in PARTS_OF.items()}
# words that only say a person's sex or age: a prompt's ungendered person ("two friends",
# "a child", "a sailor") may be described with them; "a woman" does not license "a man"
GENDERED = frozenset("man woman boy girl lady guy gentleman male female".split())
# what a text may call a subject the lexicon does not know ("Gwen Stacy", "a bigfoot")
CLASS_WORDS = frozenset(
    """person man woman girl boy lady guy child creature animal beast being
    character figure""".split()
)
# what a text may call a subject the prompt has ("a bigfoot" -> "the creature"); never a new one
DESCRIPTORS = frozenset("creature being beast figure character predator".split())
# lexicographer files of words that name a living subject, salient-listed or not ("a bigfoot")
_LIVING = ("noun.person", "noun.animal")


@dataclass(frozen=True)
class Licence:
    """The words a prompt (and the caption of its image) stand for."""

    given: frozenset[str]  # words and noun lemmas of the prompt and caption
    activities: frozenset[str]  # verb lemmas of its inflected verbs ("skiing" -> "ski")
    people_place: bool
    traffic_place: bool
    unknown_subject: bool  # a full name ("Gwen Stacy") or a word the lexicon does not know
    has_subject: bool  # it names a person, animal or creature (not only a vehicle)
    singular: frozenset[str] = frozenset()  # nouns it names only in the singular
    first_person: bool = False  # "I", "me", "my": a person of no stated sex

    @property
    def animate(self) -> bool:
        """Someone may be called "she" or "he": a person, animal, creature or name. A busy place
        is not enough: its people are anonymous background, and "she" is someone in front;
        nor is a vehicle: its driver is licensed as "the driver", not as a man with a story."""
        return self.has_subject or self.unknown_subject

    @classmethod
    def of(cls, prompt: str, context: str | None, lex: Lexicon) -> "Licence":
        given: set[str] = set()
        activities: set[str] = set()
        unknown = False
        ws = words(f"{prompt} . {context or ''}")
        for i, w in enumerate(ws):
            if w.text in STOPWORDS or (w.text in PICTURE_WORDS and not w.text.endswith("ing")):
                continue  # "a tableau", "a still frame" license no one ("painting" may)
            given.add(w.text)
            noun, verb = lex.noun_lemma(w.text), lex.verb_lemma(w.text)
            if noun:
                given.add(noun)
            if verb and (verb != w.text or not noun):
                activities.add(verb)
            named = (
                i + 1 < len(ws)
                and w.raw[:1].isupper()
                and ws[i + 1].raw[:1].isupper()
                and not noun
                and not lex.noun_lemma(ws[i + 1].text)
            )  # "Gwen Stacy"
            unknown = (
                unknown
                or named
                or (not lex.knows(w.text) and w.text not in STOPWORDS and len(w.text) > 2)
            )
        first_person = any(w.text in FIRST_PERSON for w in ws)
        has_subject = first_person or any(_living(g, lex) for g in given if lex.noun_lemma(g) == g)
        plural = {lex.noun_lemma(w.text) for w in ws if lex.noun_lemma(w.text) != w.text}
        singular = {w.text for w in ws if lex.noun_lemma(w.text) == w.text} - plural
        return cls(
            frozenset(given),
            frozenset(activities),
            bool(given & PEOPLE_PLACES),
            bool(given & TRAFFIC_PLACES),
            unknown,
            has_subject,
            frozenset(singular),
            first_person,
        )

    def _ungendered_person(self, lex: Lexicon) -> bool:
        """It names a person of no sex or age ("two friends", "a child", "I")."""
        people = [g for g in self.given if lex.salient_class(g) == "person"]
        if not people:
            return self.first_person
        return not any(g in GENDERED or any(lex.licenses(x, g) for x in GENDERED) for g in people)

    def allows(
        self, lemma: str, lex: Lexicon, *, plural: bool = False, counted: bool = False
    ) -> bool:
        """True when an output may name ``lemma`` (a salient noun lemma); ``counted``: with a
        number ("two people"), which makes anonymous background people someone in front."""
        cls = lex.salient_class(lemma)
        return (
            self._names(lemma, cls, lex, plural)
            or self._implies(lemma, cls, lex)
            or self._background(lemma, cls, plural, counted)
        )

    def _names(self, lemma: str, cls: str | None, lex: Lexicon, plural: bool) -> bool:
        """The prompt names it: the word, a synonym, a more general or specific term (but "a
        shark" never licenses many "fish"), a compound's head (spaceship -> ship; not animals:
        a jellyfish is no fish), or a class word for a subject the lexicon does not know."""
        if lemma in self.given:
            return True
        licensing = {g for g in self.given if lex.licenses(g, lemma)}
        if licensing and not (plural and self._one_of_kind(lemma, licensing, cls, lex)):
            return True
        if cls != "animal" and any(
            len(g) > len(lemma) + 2 and g.endswith(lemma) and lex.salient_class(g) == cls
            for g in self.given
        ):
            return True
        if lemma in GENDERED and self._ungendered_person(lex):
            return True  # "two friends" -> "a woman", "a man"
        if lemma in KIN and self._animals_only(lex):
            return True  # "a cow joins the herd": "its companions"
        if lemma in DESCRIPTORS and self.has_subject:  # "the creature"; "creatures" only for many
            return not plural or any(
                g not in self.singular and lex.salient_class(g) for g in self.given
            )
        return self.unknown_subject and lemma in CLASS_WORDS

    def _animals_only(self, lex: Lexicon) -> bool:
        classes = {lex.salient_class(g) for g in self.given}
        return "animal" in classes and "person" not in classes and not self.first_person

    def _one_of_kind(self, lemma: str, licensing: set[str], cls: str | None, lex: Lexicon) -> bool:
        """Many of ``lemma`` would stand for one thing of the prompt: it names one singular
        ``cls`` (a shark: not "schools of fish"; a heron and a turtle: "both animals")."""
        same_class = {
            g for g in self.given if lex.noun_lemma(g) == g and lex.salient_class(g) == cls
        }
        return (
            len(same_class) <= 1
            and len(licensing) == 1
            and all(g in self.singular and lex.more_general(lemma, g) for g in licensing)
        )

    def _implies(self, lemma: str, cls: str | None, lex: Lexicon) -> bool:
        """Its activities or vehicles bring it: skiing -> skier, a truck -> its driver, an
        astronaut -> the rocket, sailing -> the boat (or a vessel whose gloss says sailing)."""
        if any(lex.agent_of(v, lemma) for v in self.activities):
            return True
        if any(
            lemma in _ROLES_OF_VEHICLE.get(g, ()) or lemma in _VEHICLES_OF_ROLE.get(g, ())
            for g in self.given
        ):
            return True
        if any(
            lemma in _VEHICLES_OF_ACTIVITY.get(v, ()) or lemma in _PARTS.get(v, ())
            for v in self.activities | self.given
        ):
            return True
        doing = {w for w in self.given if w.endswith("ing")} | self.activities
        return cls == "vehicle" and lex.gloss_names(lemma, doing)

    def _background(self, lemma: str, cls: str | None, plural: bool, counted: bool) -> bool:
        """Anonymous people of a busy place (never counted ones), traffic of a road."""
        if cls == "person" and self.people_place:
            return (
                lemma in BACKGROUND_PEOPLE or plural and lemma in BACKGROUND_PLURAL
            ) and not counted
        if cls == "vehicle" and self.traffic_place:
            return plural or lemma in BACKGROUND_TRAFFIC
        return False


def _living(lemma: str, lex: Lexicon) -> bool:
    """A person, animal or creature, listed as salient or only filed so by WordNet ("a bigfoot")."""
    cls = lex.salient_class(lemma)
    if cls is not None:
        return cls in ("person", "animal", "creature")
    return lex.lexname(lemma) in _LIVING and lemma not in NOT_SALIENT
