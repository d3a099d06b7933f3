"""The graph LangGraph's server serves in toolnexus' tests (see server.py): one model call on the
conversation's messages, the model the field's stub (FIELD_MODEL_URL, OpenAI-style)."""

import os

from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph

model = ChatOpenAI(
    model="stub-model",
    api_key="stub",
    base_url=os.environ["FIELD_MODEL_URL"] + "/v1",
    streaming=True,
)


async def answer(state: MessagesState) -> dict:
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = StateGraph(MessagesState).add_node("answer", answer).add_edge(START, "answer").compile()
