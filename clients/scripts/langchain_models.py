"""LangChain's ChatOpenAI and ChatAnthropic against the gateway: ``bind_tools`` and a tool call,
then the tool's result sent back; and a streamed answer."""

from __future__ import annotations

import os
import sys

from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

URL, KEY, MODEL = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"], os.environ["MODEL"]


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def chat_model(provider: str) -> BaseChatModel:
    if provider == "anthropic":
        return ChatAnthropic(base_url=URL, api_key=KEY, model=MODEL, max_retries=0)  # type: ignore[call-arg]
    responses = provider == "openai-responses"
    return ChatOpenAI(
        base_url=f"{URL}/v1", api_key=KEY, model=MODEL, max_retries=0, use_responses_api=responses
    )


def main(provider: str, case: str) -> None:
    model = chat_model(provider)
    if case == "streamed":
        print("".join(text_of(chunk) for chunk in model.stream("Say something")))
        return
    with_tools = model.bind_tools([get_weather])
    messages: list[BaseMessage] = [HumanMessage("Weather in Oslo?")]
    asked = with_tools.invoke(messages)
    messages.append(asked)
    for call in asked.tool_calls:  # type: ignore[attr-defined]
        messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    print(text_of(with_tools.invoke(messages)))


def text_of(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b.get("text", "") for b in message.content if isinstance(b, dict))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
