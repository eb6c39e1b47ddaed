"""The text L-Eval's models and judges see: system prompts per task family, the user-turn layout,
the length instruction (LIE) and the pairwise judge's prompts.

The strings are the wording of the official repository (OpenLMLab/LEval, GPL-3), reproduced
because the model must see the same text; typos included ("sinlge"). Sources:
``Baselines/LEval_config.py`` (``get_sys_prompt``), ``Baselines/turbo16k-test.py`` (user turns,
LIE sentence, the SFiction fact question), ``Evaluation/llm_eval.py`` (judge system prompt and
template ``pair-v2``). No code is copied; lceval splits each user turn into
``description + context + instruction`` (joined by ``Sample.joiner``) so that backends can
right-truncate the document alone.
"""

from __future__ import annotations

from lceval.benchmarks.leval.gold import OPEN_TASKS

SYSTEM_GSM = (
    "Given several question answer pairs, you need to follow a similar format to answer the last "
    "question. Make sure the response is end with The answer is _ . "
)
SYSTEM_TOPIC = (
    "Below is a record of our previous conversation on many different topics. You are the "
    "ASSISTANT, and I am the USER. At the beginning of each topic, the USER will say 'I would like "
    "to discuss the topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, I will ask "
    "you to retrieve the first/second/third topic names. Now the record start. "
)
SYSTEM_COURSERA = (
    "Now you are given a very long document. Please follow the instruction based on this "
    "document. For multi-choice questions, there could be a sinlge correct option or multiple "
    "correct options. Please only provide the letter corresponding to the answer (like A or AB) "
    "when answering. "
)
SYSTEM_CODEU = (
    "Now you are given a code base consisting of a large amount of functions and the "
    "corresponding comments. In the end, I will call some functions defined in the code base. "
    "Please carefully read these codes and comments and answer the question."
)
SYSTEM_SCI_FI = (
    "Now you are given a scientific fiction. I will ask you some questions and the answer should "
    'be "True" or "False". Notice that you should answer the question based on the evidence in '
    "the document instead of your background knowledge."
)
SYSTEM_EXAM = (
    "Now you are given a very long document. Please follow the instruction based on this "
    "document. For multi-choice questions, there is only a sinlge correct option. Please only "
    "provide the letter corresponding to the answer (like A or B) when answering. For other "
    "questions, please directly give the concise and accurate answer. "
)
SYSTEM_OPEN = (
    "Now you are given a very long document. Please follow the instruction after this document. "
    "These instructions may include summarizing a document, answering questions based on the "
    "document, or writing a required paragraph. "
)

DOCUMENT_INTRO = "Document is as follows."
"""Text before the document in exam and open-ended user turns."""
EXAM_QUESTION = (
    "Question: {inst} \nPlease directly give answer without any additional output or explanation"
    "\n Answer: "
)
"""Text after the document for exam tasks (``{inst}`` = the official instruction)."""
OPEN_INSTRUCTION = "Instruction: {inst} {lie}Output: "
"""Text after the document for open-ended tasks; ``{lie}`` is :data:`LIE` or empty."""
LIE = "The suggested output length is around {words} words. "
"""The length instruction (LIE) with the reference's word count."""
SCI_FI_WORLD = "based on the world described in the document."
SCI_FI_FACT = "based on the real-world knowledge and facts up until your last training"
FACT_SUFFIX = "\nPlease directly give answer without any additional output or explanation \nAnswer:"
"""Appended to the SFiction question turned into its world-knowledge (fact) version."""

JUDGE_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two "
    "AI assistants to the user question about the content of a long document.  You will be given "
    "a reference answer written by human, assistant A's answer, and assistant B's answer. Your "
    "job is to evaluate which assistant's answer is better. Begin your evaluation by comparing "
    "both assistants' answers with the reference answer. Additional details or information that "
    "are not mentioned in reference answer cannot be considered as advantages and do not let "
    "them sway your judgment. Your evaluation should also consider the relevance to user's "
    "question but it is more important to avoid factual errors according to the reference "
    "answer. Avoid any position biases and ensure that the order in which the responses were "
    "presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective as "
    "possible. After providing your explanation, output your final verdict by strictly following "
    'this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B is better, and '
    '"[[C]]" for a tie.'
)
"""The pairwise judge's system prompt (official ``pair-v2``), with the long-context sentence."""
JUDGE_TEMPLATE = (
    "[User Question]\n{question}\n\n[The Start of Reference Answer]\n{ref_answer}\n"
    "[The End of Reference Answer]\n\n[The Start of Assistant A's Answer]\n{answer_a}\n"
    "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n"
    "[The End of Assistant B's Answer]"
)
"""The judge's user turn: question, reference, two answers; no document."""


def system_prompt(task: str) -> str:
    """The system prompt of ``task`` (official ``get_sys_prompt``; exam tasks without their own
    prompt get the generic exam prompt, open-ended tasks the generic open prompt).

    Args:
        task: a task code of :data:`lceval.benchmarks.leval.gold.TASKS`.
    """
    if task == "gsm100":
        return SYSTEM_GSM
    if task == "topic_retrieval_longchat":
        return SYSTEM_TOPIC
    if task == "coursera":
        return SYSTEM_COURSERA
    if task == "codeU":
        return SYSTEM_CODEU
    if task == "sci_fi":
        return SYSTEM_SCI_FI
    if task in OPEN_TASKS:
        return SYSTEM_OPEN
    return SYSTEM_EXAM


def fact_question(inst: str) -> str:
    """The SFiction world-knowledge question for document question ``inst`` (turbo16k-test.py).

    The document phrase is replaced by the real-world phrase and :data:`FACT_SUFFIX` appended.
    """
    return inst.replace(SCI_FI_WORLD, SCI_FI_FACT) + FACT_SUFFIX
