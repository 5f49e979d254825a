"""Writes saved-test-cases.json with DeepEval itself (see SOURCE.txt; run where deepeval is installed)."""

import os

os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
from deepeval.dataset import EvaluationDataset  # noqa: E402 - after the telemetry opt-out
from deepeval.test_case import ConversationalTestCase, ToolCall, Turn  # noqa: E402 - after the telemetry opt-out

case = ConversationalTestCase(
    name="weather-follow-up",
    scenario="A user checks the weather and then asks a follow-up that depends on the first answer.",
    expected_outcome="The assistant answers the follow-up consistently with the forecast it gave.",
    chatbot_role="A concise weather assistant that only talks about the weather.",
    turns=[
        Turn(role="user", content="What's the weather in Paris tomorrow?"),
        Turn(
            role="assistant",
            content="Tomorrow in Paris: light rain, 14 degrees.",
            tools_called=[
                ToolCall(
                    name="get_forecast",
                    input_parameters={"city": "Paris", "day": "tomorrow"},
                    output={"summary": "light rain", "temp_c": 14},
                )
            ],
        ),
        Turn(role="user", content="So do I need an umbrella?"),
        Turn(role="assistant", content="Yes, take an umbrella: rain is expected."),
    ],
)
dataset = EvaluationDataset()
dataset.add_test_case(case)
dataset.save_as(file_type="json", directory=".", file_name="conversational-test-cases", include_test_cases=True)
