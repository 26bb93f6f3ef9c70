"""Queries with no answer in a collection, and on-topic queries on a manual, for choosing a relevance floor (issue 52).

Each set has a tuning half and a test half: the floor and its constants are chosen on ``tune`` (with SciFact train
and the dbpedia-5k dev split) and measured once on ``test`` (bench.tune_floor).

- ``everyday``: everyday questions (recipes, sports, chores): no answer in biomedical claims (SciFact), an
  encyclopedia sample (dbpedia-5k) or an installation manual. ``tune`` is bench.offtopic's list; ``test`` was
  written apart from it.
- ``everyday_i18n`` (test only): the same kind of question in German, French and Spanish, for the manuals in
  those languages; ``everyday_i18n_more`` 24 more, written later (see there).
- ``nonsense``: made-up words, 1 to 4 a query, from a fixed syllable draw (seed 52); bench.tune_floor keeps only
  words that no chunk of the collection holds (made-up words appear in no document).

``manual_headings`` draws on-topic queries from Debian's installation guide (the plain-text build in four languages,
bench.exact_words' collection): each section's title as printed ("Partitioning and Mount Point Selection"), its
passages the ones holding the title.
"""

from __future__ import annotations

import json
import random
import re
from functools import cache
from pathlib import Path

from .offtopic import OFF_TOPIC

EVERYDAY_TEST = [
    "how long should I rest a steak after grilling",
    "best way to store fresh basil in the fridge",
    "who scored the winning goal in the cup final",
    "how to hang a heavy mirror on a plaster wall",
    "cheap hotels near the beach for a family holiday",
    "how to stop a dog barking at the postman",
    "what to wear to a summer garden wedding",
    "how to make pancakes fluffy without buttermilk",
    "best time of day to water a vegetable garden",
    "how to get chewing gum out of jeans",
    "ideas for a romantic dinner on a budget",
    "how to iron a shirt collar without creases",
    "rules of volleyball for a beach tournament",
    "how to decorate a small apartment balcony",
    "what to bring to a potluck picnic",
    "how to teach a child to ride a bike",
    "best board shorts for surfing in cold water",
    "how to descale an electric kettle with vinegar",
    "how much to tip a taxi driver in New York",
    "how to plan a road trip along the coast",
    "easy magic tricks with a deck of cards",
    "how to keep cut flowers fresh longer",
    "what to say in a thank you card for a teacher",
    "how to choose a ripe avocado at the shop",
    "tips for a first date at the cinema",
    "how to build a snowman that does not fall over",
    "which wine goes with grilled salmon",
    "how to repair a squeaky door hinge",
    "how to fold napkins into a swan shape",
    "what time does the ferry leave on weekends",
    "how to remove rust from garden shears",
    "fun games for a rainy afternoon indoors",
    "how to make a paper airplane that flies far",
    "how to pick a pumpkin for carving",
    "best way to pack a suitcase for a long flight",
    "how to whiten grout in a bathroom",
    "what to cook for a vegetarian barbecue",
    "how to train for a five kilometre fun run",
    "how to stop a tap from dripping",
    "ideas for a surprise anniversary gift",
]

EVERYDAY_I18N = [
    "Rezept für Apfelkuchen mit Streuseln",
    "wann fährt der letzte Bus zum Bahnhof",
    "wie lange muss ein Ei kochen damit es weich bleibt",
    "Tipps für den Urlaub am Strand mit Kindern",
    "wer hat das Fußballspiel am Samstag gewonnen",
    "wie entferne ich Rotweinflecken aus dem Teppich",
    "Geschenkideen zum Geburtstag der Großmutter",
    "recette de la tarte aux pommes de ma grand-mère",
    "à quelle heure ferme la boulangerie le dimanche",
    "comment enlever une tache de vin rouge sur un tapis",
    "idées de vacances à la plage avec des enfants",
    "qui a gagné le match de rugby samedi soir",
    "comment faire pousser des tomates sur un balcon",
    "meilleur fromage pour une raclette entre amis",
    "receta de tortilla de patatas con cebolla",
    "a qué hora cierra el supermercado el domingo",
    "cómo quitar una mancha de vino tinto de la alfombra",
    "ideas para una fiesta de cumpleaños infantil",
    "quién ganó el partido de fútbol del sábado",
    "cómo cultivar tomates en el balcón de casa",
]

# Written later (2026-12-07), apart from EVERYDAY_I18N and after the rules for a question the model cannot read were
# chosen on it: 8 each in German, French and Spanish. They found hybrid answers on the meaning of passages holding none
# of their words (3 of 24 in one collection of the manual set), which relevance._tied now leaves out; the choice
# between two forms of that rule was made with them in view, so they are not held out from it.
EVERYDAY_I18N_MORE = [
    "wie wechsle ich einen platten Fahrradreifen",
    "welcher Wein passt zu gegrilltem Lachs",
    "wie lange muss ein Schweinebraten im Ofen bleiben",
    "Öffnungszeiten des Schwimmbads in den Ferien",
    "wie bringe ich meinem Hund bei, nicht zu bellen",
    "beste Wanderwege in den Alpen für Anfänger",
    "wie pflanze ich Tulpenzwiebel im Herbst",
    "was kostet ein Ticket für das Konzert am Freitag",
    "comment changer un pneu crevé de vélo",
    "quel vin servir avec un poulet rôti",
    "horaires du marché de Noël à Strasbourg",
    "comment apprendre à nager à un enfant",
    "combien de temps cuire des pâtes al dente",
    "meilleure plage de Bretagne pour le surf",
    "comment détartrer une bouilloire avec du vinaigre",
    "que faire à Paris un dimanche pluvieux",
    "cómo cambiar la rueda pinchada de una bicicleta",
    "qué vino va bien con el pescado a la plancha",
    "horario del museo del Prado los lunes",
    "cómo enseñar a un niño a montar en bici",
    "cuánto tiempo hay que hervir un huevo duro",
    "mejores playas de Andalucía para ir con niños",
    "cómo limpiar el horno sin productos químicos",
    "dónde comprar entradas para el partido del domingo",
]

_ONSETS = ["b", "br", "d", "dr", "f", "fl", "g", "gr", "k", "kl", "m", "n", "p", "pl", "s", "st", "t", "tr", "v", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ou", "ai", "ei"]
_CODAS = ["", "", "n", "r", "l", "x", "sk", "mp", "nd", "rt"]


def made_up_word(rng: random.Random) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(2, 3)))


def nonsense(count: int = 80, seed: int = 52) -> list[str]:
    """``count`` queries of 1 to 4 made-up words; a quarter carry a few real function words ("the ... of ...")."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [made_up_word(rng) for _ in range(rng.randint(1, 4))]
        if i % 4 == 3 and len(words) >= 2:
            words = ["the", words[0], "of", *words[1:]]
        out.append(" ".join(words))
    return out


def offtopic_sets(part: str, multilingual: bool = False) -> dict[str, list[str]]:
    """The off-topic sets of one half ("tune" or "test"): set name -> queries."""
    made_up = nonsense()
    half = len(made_up) // 2
    if part == "tune":
        return {"everyday": list(OFF_TOPIC), "nonsense": made_up[:half]}
    sets = {"everyday": list(EVERYDAY_TEST), "nonsense": made_up[half:]}
    more = {"everyday_i18n": list(EVERYDAY_I18N), "everyday_i18n_more": list(EVERYDAY_I18N_MORE)}
    return sets | (more if multilingual else {})


JUDGED = Path(__file__).with_name("sets") / "offtopic_judged.json"


@cache
def topical(collection: str) -> frozenset[str]:
    """The everyday questions (both halves) a reader judged ``collection`` to hold a document on: one the search ranks
    near the top is about what the question asks ("how do I change a flat bicycle tyre" and dbpedia-5k's *Bicycle
    tire*). Judged blind to what the relevance floor shows (bench/sets/offtopic_judged.json says how); showing them
    is right, so bench.tune_floor also reports silence without them."""
    judged = json.loads(JUDGED.read_text())["collections"].get(collection, {})
    return frozenset(question for question, verdict in judged.items() if verdict["topical"])


_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.? +(\S.{3,80})$")


def manual_headings(text: str, count: int = 40, seed: int = 52) -> list[str]:
    """``count`` section titles of a plain-text manual (numbered lines at the margin, "6.3.4. Partitioning ..."),
    each once, drawn with ``seed``; the first half tunes, the second half tests."""
    titles = sorted({m.group(2).strip() for line in text.splitlines() if (m := _HEADING.match(line))})
    return random.Random(seed).sample(titles, min(count, len(titles)))
