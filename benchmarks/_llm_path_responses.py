"""The LLM path benchmark's Responses API contenders: agentgraph and the official SDK.

Both run the same task as the chat-completions contenders against the fake server's
`/v1/responses`, statelessly (`store: false`): every turn sends the whole conversation as
input items, the system prompt as `instructions`.
"""

import json
from contextlib import AsyncExitStack
from typing import Any

from _llm_path_pool import Pool, httpx_client
from _llm_path_task import (
    API_KEY,
    IMPLS,
    MAX_TURNS,
    MODEL,
    RESPONSES_TOOL_PARAMS,
    SYSTEM_PROMPT,
    agentgraph_run_once,
    question,
)

from agentgraph.llm import OpenAIResponsesModel, ProviderRetry

LABELS = {
    "agentgraph-responses": "agentgraph (`react_agent`, `OpenAIResponsesModel`)",
    "openai-responses": "`openai` SDK (`client.responses.create`)",
}


async def agentgraph_responses(url: str, pool: Pool, stack: AsyncExitStack) -> Any:
    client = await stack.enter_async_context(httpx_client(pool))
    model = OpenAIResponsesModel(
        MODEL,
        base_url=url,
        api_key=API_KEY,
        http_client=client,
        retry=ProviderRetry(max_retries=0),
    )
    return agentgraph_run_once(model)


async def openai_responses(url: str, pool: Pool, stack: AsyncExitStack) -> Any:
    import httpx
    import openai

    client = openai.AsyncOpenAI(
        base_url=url,
        api_key=API_KEY,
        http_client=httpx_client(pool),
        max_retries=0,
        timeout=httpx.Timeout(pool.timeout, connect=pool.connect_timeout),
    )
    stack.push_async_callback(client.close)

    async def run_once(i: int) -> tuple[str, int]:
        items: list[Any] = [{"type": "message", "role": "user", "content": question(i)}]
        for turn in range(1, MAX_TURNS + 2):
            response = await client.responses.create(
                model=MODEL,
                input=items,
                instructions=SYSTEM_PROMPT,
                tools=RESPONSES_TOOL_PARAMS,
                store=False,
            )
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return response.output_text, turn
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "id": call.id,
                        "call_id": call.call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                )
            for call in calls:
                value = await IMPLS[call.name](**json.loads(call.arguments))
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": json.dumps(value),
                    }
                )
        raise RuntimeError("the model never stopped calling tools")

    return run_once


CONTENDERS = {
    "agentgraph-responses": agentgraph_responses,
    "openai-responses": openai_responses,
}
