"""Generation judging (SPEC §4): sample answers, judge them off the hot path, window the
scores.

sampler (which answers) -> workers (bounded queue, bounded concurrency) -> judge (`lexical`
heuristic or `openai`-compatible LLM) -> results (windows, Wilson intervals, judge labels,
audit topic). See docs/judging.md.
"""

from ragstream.judging.agreement import (
    Confusion,
    CorrectedRate,
    Estimate,
    auroc,
    corrected_rate,
    wilson_interval,
)
from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.judging.cache import JudgmentCache, cache_key
from ragstream.judging.circuit import CircuitBreaker, CircuitState
from ragstream.judging.collector import JudgeCollector
from ragstream.judging.http import ChatClient, ChatResponse, parse_retry_after
from ragstream.judging.lexical import LexicalJudge
from ragstream.judging.model import (
    AnswerLike,
    Claim,
    Judge,
    JudgeError,
    JudgeInput,
    Judgment,
    Usage,
)
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from ragstream.judging.prompts import PROMPT_VERSION
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import (
    GENERATION_COLUMNS,
    GenerationRead,
    JudgeLabel,
    JudgeResults,
    judge_labels,
)
from ragstream.judging.sampler import (
    Decision,
    LabelRule,
    Outcome,
    RetrievalRule,
    Sampler,
    sample_point,
)
from ragstream.judging.service import (
    JudgingService,
    engine_label_sink,
    engine_lookup,
)
from ragstream.judging.workers import JudgeWorkers

__all__ = [
    "GENERATION_COLUMNS",
    "PROMPT_VERSION",
    "AnswerLike",
    "ChatClient",
    "ChatResponse",
    "CircuitBreaker",
    "CircuitState",
    "Claim",
    "Confusion",
    "CorrectedRate",
    "CostBudget",
    "Decision",
    "Estimate",
    "GenerationRead",
    "Judge",
    "JudgeCollector",
    "JudgeError",
    "JudgeInput",
    "JudgeLabel",
    "JudgeResults",
    "JudgeWorkers",
    "JudgingService",
    "Judgment",
    "JudgmentCache",
    "JudgmentPublisher",
    "LabelRule",
    "LexicalJudge",
    "OpenAIJudge",
    "Outcome",
    "RetrievalRule",
    "Sampler",
    "TokenAccount",
    "TokenBucket",
    "Usage",
    "auroc",
    "cache_key",
    "corrected_rate",
    "engine_label_sink",
    "engine_lookup",
    "judge_labels",
    "parse_retry_after",
    "sample_point",
    "wilson_interval",
]
