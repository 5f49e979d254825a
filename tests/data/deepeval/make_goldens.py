"""Writes conversational-goldens.json and goldens.json with DeepEval itself (see SOURCE.txt; run where deepeval is installed)."""

import os

os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
from deepeval.dataset import ConversationalGolden, EvaluationDataset, Golden  # noqa: E402 - after the telemetry opt-out
from deepeval.test_case import Turn  # noqa: E402 - after the telemetry opt-out

multi = EvaluationDataset(
    goldens=[
        ConversationalGolden(
            name="change-lisbon-flight",
            scenario="A frequent flyer wants to move their Lisbon flight from Friday to Sunday without paying a change fee.",
            expected_outcome="The flight is moved to Sunday and the agent confirms that no change fee applies to a gold member.",
            user_description="Maria Santos, gold-tier member, booking reference QX7R2P, polite but in a hurry.",
            context=["Gold members change flights free of charge."],
            additional_metadata={"domain": "airline"},
            turns=[
                Turn(role="user", content="Hi, I need to change my flight to Lisbon."),
                Turn(
                    role="assistant",
                    content="Of course. Could you give me your booking reference?",
                    retrieval_context=["Booking QX7R2P: LIS, Friday 08:10, fare class Y, gold member."],
                ),
            ],
        ),
        ConversationalGolden(
            scenario="A customer asks for a refund of a damaged blender bought 40 days ago; the policy allows refunds within 30 days only.",
            expected_outcome="The agent politely declines the refund, explains the 30-day policy and offers a repair or store credit.",
            user_description="Tom, bought the blender online, slightly annoyed.",
        ),
    ]
)
multi.save_as(file_type="json", directory=".", file_name="conversational-goldens")
single = EvaluationDataset(
    goldens=[
        Golden(
            input="What is the capital of Portugal?",
            expected_output="Lisbon",
            name="capital-portugal",
            context=["Lisbon is the capital and largest city of Portugal."],
        )
    ]
)
single.save_as(file_type="json", directory=".", file_name="goldens")
