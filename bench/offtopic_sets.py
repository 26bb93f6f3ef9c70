"""Queries with no answer in a collection, and on-topic queries on a manual, for choosing a relevance floor (issue 52).

Each set has a tuning half and a test half: the floor and its constants are chosen on ``tune`` (with SciFact train
and the dbpedia-5k dev split) and measured once on ``test`` (bench.tune_floor).

- ``everyday``: everyday questions (recipes, sports, chores): no answer in biomedical claims (SciFact), an
  encyclopedia sample (dbpedia-5k) or an installation manual. ``tune`` is bench.offtopic's list; ``test`` was
  written apart from it.
- ``everyday_i18n`` (test only): the same kind of question in German, French and Spanish, for the manuals in
  those languages.
- ``nonsense``: made-up words, 1 to 4 a query, from a fixed syllable draw (seed 52); bench.tune_floor keeps only
  words that no chunk of the collection holds (made-up words appear in no document).

``manual_headings`` draws on-topic queries from Debian's installation guide (the plain-text build in four languages,
bench.exact_words' collection): each section's title as printed ("Partitioning and Mount Point Selection"), its
passages the ones holding the title.
"""

from __future__ import annotations

import random
import re

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
    return sets | ({"everyday_i18n": list(EVERYDAY_I18N)} if multilingual else {})


_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.? +(\S.{3,80})$")


def manual_headings(text: str, count: int = 40, seed: int = 52) -> list[str]:
    """``count`` section titles of a plain-text manual (numbered lines at the margin, "6.3.4. Partitioning ..."),
    each once, drawn with ``seed``; the first half tunes, the second half tests."""
    titles = sorted({m.group(2).strip() for line in text.splitlines() if (m := _HEADING.match(line))})
    return random.Random(seed).sample(titles, min(count, len(titles)))
