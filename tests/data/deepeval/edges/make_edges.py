"""Writes edge-case DeepEval datasets with DeepEval itself (4.3.1): JSON and JSONL, multi- and single-turn."""

import os
import sys

os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
from deepeval.dataset import ConversationalGolden, EvaluationDataset, Golden  # noqa: E402
from deepeval.dataset.expectations import Expectations  # noqa: E402
from deepeval.dataset.golden import Persona  # noqa: E402
from deepeval.test_case import ToolCall, Turn  # noqa: E402

LONG = "Très long message — " * 200
multi = EvaluationDataset(
    goldens=[
        ConversationalGolden(
            name="réservation-zoë",
            scenario="Zoë veut réserver une table pour 4 à Montréal, samedi à 19 h.",
            expected_outcome="La table est réservée et l'agent confirme l'heure et le nombre de personnes.",
            persona=Persona(name="Zoë Tremblay", characteristics="Parle français, pressée, un peu impatiente.", metadata={"âge": 34, "ville": "Montréal"}),
            context=["Le restaurant ouvre à 18 h le samedi."],
            comments="édité à la main",
            additional_metadata={"domaine": "restaurant", "priorité": 2},
            custom_column_key_values={"équipe": "QA", "lot": "7"},
            expectations=Expectations(must=["confirmer l'heure"], must_not=["demander la carte bancaire"]),
            turns=[
                Turn(role="user", content="Bonjour, une table pour 4 samedi ?", user_id="u-42", metadata={"canal": "web"}),
                Turn(
                    role="assistant",
                    content="Bien sûr — à quelle heure ? 你好 👋",
                    tools_called=[ToolCall(name="check_availability", input_parameters={"date": "samedi", "personnes": 4}, output={"libre": ["19:00", "21:00"]}, reasoning="vérifier")],
                    retrieval_context=["Samedi : 19:00 et 21:00 libres."],
                    metadata={"latence_ms": 812},
                ),
                Turn(role="user", content=""),
                Turn(role="assistant", content=""),
                Turn(role="user", content=LONG),
                Turn(role="assistant", content="C'est noté."),
            ],
        ),
        ConversationalGolden(
            scenario="A user only has a scenario.",
            expected_outcome="The assistant helps.",
            user_description="Plain description (deprecated field).",
        ),
    ]
)
single = EvaluationDataset(
    goldens=[
        Golden(
            input="Quelle est la météo à Paris ?",
            expected_output="Pluie légère, 14 °C.",
            actual_output="Il pleut.",
            name="météo-paris",
            context=["Paris, demain : pluie légère."],
            retrieval_context=["Prévision : pluie, 14 °C"],
            comments="un commentaire",
            source_file="docs/météo.md",
            tools_called=[ToolCall(name="get_forecast", input_parameters={"city": "Paris"}, output="rain")],
            expected_tools=[ToolCall(name="get_forecast", input_parameters={"city": "Paris"})],
            additional_metadata={"k": "v"},
            custom_column_key_values={"col": "val"},
            expectations=Expectations(must=["mention rain"]),
        ),
    ]
)
out = sys.argv[1] if len(sys.argv) > 1 else "."
for fmt in ("json", "jsonl", "csv"):
    multi.save_as(file_type=fmt, directory=out, file_name="edge-conversational")
    single.save_as(file_type=fmt, directory=out, file_name="edge-goldens")
