"""The mistakes the kata's checks recognise, and what a failed check says about each: one message each.

A check (``kata_checks.py``) names a likely cause when a wrong result equals one of these mistakes
recomputed (``assert_close(got, expected, diagnoses=[(alternative, MESSAGE), ...])``), or when the error
the student's code raised is the very one the mistake raises on the same objects (``error_of``,
``transpose_errors``, ``mask_errors``: ``call_checked(..., errors=[(ERROR TEXT, MESSAGE)])``). Each cause
checks its premise: an alternative that equals the right computation (a scale of 1/√1, a mask that
needs no cut) names nothing, and a cause that names code (``.T``, "not cut") is named only when the
student's objects (their error, their mask's shape) show it.
``kata_checks`` re-exports the names above the issue-38 block at the end: the tests import those from there,
and the later ones from here.

(For the instructors: ``tests/kata_mistakes.py``, which the hidden tests' ``kata_checks.py`` imports, is a
symbolic link to this file, as ``tests/kata_checks.py`` is to ``kata_checks.py``.)
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

WRONG_DIM = "softmax over the wrong dim (columns instead of rows): normalize along the last dim"
DIM_IGNORED = "the dim argument is ignored: normalize along dim, not always along the last dim"
WHOLE_TENSOR = "normalized over the whole tensor: sum along dim only (keepdim=True), not over every element"
NO_KEEPDIM = ("a sum (or max) along dim without keepdim=True: it has one dimension fewer and broadcasts against the "
              "wrong axis (sum(dim=dim, keepdim=True), amax(dim=dim, keepdim=True) keep it aligned)")
NO_SOFTMAX = "no softmax: the raw scores were used as weights"
GLOBAL_MAX = ("subtracted the maximum of the whole tensor, not each row's own (the global max, not the max along dim): "
              "a row whose scores are far below it underflows to exp(...) = 0 everywhere, and 0 / 0 is NaN; subtract "
              "scores.amax(dim=dim, keepdim=True)")
NO_MAX_SHIFT = "subtract the maximum along dim before exponentiating: exp(1000) is inf, and inf / inf is NaN"
SIMPLE_NOT_SCALED = "scaled the scores by 1/√d: simple self-attention has no scaling"
BATCH_DOT_T = (".T on a batch: for a 3-D tensor .T reverses ALL dimensions (and is deprecated); "
               "swap only the last two with .transpose(-2, -1)")
UNMASKED = "output matches the unmasked attention: apply the causal mask"
MASK_NOT_CUT = ("the mask was not cut to T × T: with fewer tokens than context_length, "
                "index the (context_length, context_length) mask with [:T, :T] (T = x.shape[1])")
AXES_0_1_SWAPPED = ("swapped axes 0 and 1 (transpose(0, 1)): on a batch, axis 0 is the batch; swap the last two "
                    "with .transpose(-2, -1)")
TOKENS_FROM_BATCH = ("the number of tokens was read from the batch axis: x.shape[0] is the batch size; the tokens are "
                     "T = x.shape[1] (x.shape[-2]), for the mask's cut [:T, :T] and the check against context_length")
DEVICE_MIX = ("a tensor created on the CPU (no device=) was mixed with an input on another device: create masks "
              "with device=<the input>.device, or keep them in a buffer (self.register_buffer) so that .to() moves them")
MASK_NOT_A_BUFFER = ("register the mask with self.register_buffer('mask', ...): a plain attribute is not saved "
                     "in state_dict and does not follow .to(device)")
TENSOR_NOT_A_BUFFER = ("a tensor kept as a plain attribute (self.<name> = tensor) does not follow .to(device): register "
                       "it with self.register_buffer('<name>', ...)")
MODULES_IN_A_PLAIN_LIST = ("modules kept in a plain Python list are not registered: .to(), .parameters() and state_dict() "
                           "miss them; hold them in an nn.ModuleList")
MASK_NOT_PERSISTENT = ("the mask is a buffer but registered with persistent=False, so state_dict leaves it out: "
                       "drop persistent=False (the documents save it with the model)")
CREATION_ORDER = ("if only this seeded test fails (the tests with other seeds or loaded weights pass): create "
                  "W_query, W_key, W_value (then out_proj) in that order, right after super().__init__()")
DROPOUT_NOT_APPLIED = ("dropout was never applied: with dropout=0.5 in training mode the output equals the output "
                       "without dropout; apply self.dropout to the attention weights after the softmax, before @ values")
DROPOUT_IN_EVAL = "dropout still acts after .eval(): use nn.Dropout (the identity in eval mode), not a hand-made one"
NAN_AT_P1 = ("divided by 1 - p = 0 at p = 1 (0 / 0 is NaN): when p == 1 every element is dropped: return zeros")
P_NOT_CHECKED = "check that 0 <= p <= 1 first and raise ValueError otherwise, before drawing the mask"
TOO_MANY_TOKENS = "more tokens than context_length: raise ValueError naming both numbers"
NOT_DIVISIBLE = "d_out must be divisible by num_heads: raise ValueError (not assert: an assert raises AssertionError)"
DIVISIBILITY_NOT_CHECKED = "d_out must be divisible by num_heads: check it first and raise ValueError naming both numbers"
NOT_RESCALED = "survivors were not divided by 1 - p (inverted dropout keeps the expected value unchanged)"
KEEP_PROB_SWAPPED = ("drew the keep-mask with bernoulli_(p): p is the probability to DROP an element, so each one is "
                     "KEPT with probability 1 - p: torch.empty_like(x).bernoulli_(1 - p)")
COPY_ALIASES = ("the two modules share storage (aliases): assigning .data = or a view of the other module's tensor links "
                "them; copy the values with param.copy_(...) under torch.no_grad()")
COPY_REPLACES = ("the nn.Parameter was replaced by a new object: copy the values into the existing one "
                 "(param.copy_(...) under torch.no_grad()), so optimizers and hooks holding it still see it")
COPY_NOT_TRANSPOSED = ("copied without transposing: nn.Linear stores its weight as (d_out, d_in), SelfAttention_v1 "
                       "as (d_in, d_out): copy the transpose (.T), not a reshape/view of the same numbers")
BIAS_NOT_ZEROED = "v1 has no bias: set v2's biases to zero so that both compute the same output"
BIAS_NOT_REFUSED = "SelfAttention_v1 has nowhere to put v2's biases: raise ValueError instead of dropping them"
NO_GRADIENT = ("keep the forward differentiable: no torch.no_grad(), .detach() or .data in it; the weights are "
               "nn.Parameter / nn.Linear")
SHAPES_NOT_REFUSED = "the shapes do not match: raise ValueError naming them"
PARTIAL_COPY = ("check every shape (and bias) first, then copy: a ValueError half-way leaves the target "
                "half-copied")
QKV_BIAS_NOT_USED = ("qkv_bias is ignored: create W_query, W_key and W_value as "
                     "nn.Linear(d_in, d_out, bias=qkv_bias), so that qkv_bias=True gives each a bias")
LAYERS_RENAMED = ("the layers are named otherwise: W_query, W_key and W_value are the documents' names, which the "
                  "tests and the grader find them by")
QKV_BIAS_IGNORED = "qkv_bias is not passed on: give it to every CausalAttention head (its nn.Linear(..., bias=qkv_bias))"
NO_OUT_PROJ = "output matches the heads' merged context before out_proj: apply self.out_proj to the merged heads"
SPLIT_BARE_VIEW = ("split the heads with a bare .view(b, num_heads, T, head_dim): view as (b, T, num_heads, head_dim), "
                   "then transpose(1, 2)")
OUT_PROJ_WITHOUT_BIAS = ("out_proj has no bias: create it as nn.Linear(d_out, d_out), whose bias=True is the default; "
                         "qkv_bias is for W_query, W_key and W_value only")
GPT2_WITH_QKV_BIAS = ("gpt2_attention() gives W_query, W_key and W_value biases, which MultiHeadAttention's default "
                      "(qkv_bias=False) does not: build it with the default")
MERGE_BARE_RESHAPE = ("merged the heads with a bare reshape: transpose(1, 2) back to (b, T, num_heads, head_dim) first, "
                      "then reshape to (b, T, d_out)")

SCALED_BY_D_IN = "scaled by 1/√d_in, the input's size: the scale is 1/√d_k, with d_k = keys.shape[-1] (d_out)"
MASK_COMPLEMENT = ("the mask is the complement: causal_mask marks with 1 what each token may see (itself and the tokens "
                   "before it: torch.tril), not what it must not see (torch.triu(..., diagonal=1))")
MASK_BUFFER_COMPLEMENT = ("the mask buffer marks what each token may see (torch.tril): forward fills the scores where it "
                          "is 1, so it must mark what a token must not see, torch.triu(..., diagonal=1)")
MASK_TRANSPOSED = "the mask is transposed: keep the lower triangle (token i sees tokens 0..i), torch.tril"
NOT_RENORMALIZED = "the future weights are zeroed but the rows are not renormalized: divide each row by its sum"
MASKED_WITH_ZEROS = ("masked the scores with 0 instead of -inf: exp(0) = 1 still gives the future tokens weight; "
                     "masked_fill(..., -inf) before the softmax")
DROPOUT_IGNORES_TRAINING = "dropout acts with training=False too: return x unchanged when not training"
MASK_AFTER_SOFTMAX = "masked after the softmax without renormalizing: mask the scores with -inf before the softmax"
KEYS_RESHAPED = "reshaped the keys to (b, h, head_dim, T) instead of transposing their last two axes: keys.transpose(2, 3)"
CONCAT_ON_TOKENS = "concatenated the heads along the tokens (dim=1): concatenate along the features, dim=-1"
KEYS_TIMES_QUERIES = "computed K Qᵀ instead of Q Kᵀ: the scores are queries @ keys.transpose(-2, -1) (row i: query i)"
DIVIDED_BY_P = "divided the survivors by p: inverted dropout divides them by 1 - p, the probability to keep"
RENORMALIZED_BY_COLUMNS = ("renormalized by the column sums (dim=-2): each row must sum to 1, divide by "
                           "sum(dim=-1, keepdim=True)")
TRIL_DIAGONAL_1 = ("torch.tril(..., diagonal=1) also lets each token see the next one: the mask is "
                   "torch.tril(torch.ones(T, T)) (diagonal 0)")
SCALED_AFTER_SOFTMAX = "scaled after the softmax: divide the scores by √d_k before the softmax, not the weights after it"
HEADS_INTERLEAVED = ("the heads are interleaved: head h gets the features h*head_dim:(h+1)*head_dim; view as "
                     "(b, T, num_heads, head_dim), then transpose(1, 2)")
MERGED_IN_WRONG_ORDER = ("merged the heads in the wrong order: transpose(1, 2) back to (b, T, num_heads, head_dim), "
                         "then reshape: head 0's features first")
RANDN_FOR_RAND = ("the weights come from torch.randn: SelfAttention_v1 draws them with torch.rand (uniform in [0, 1)), "
                  "as the documents do")

DROPOUT_BEFORE_SOFTMAX = ("dropout was applied to the scores before the softmax: apply it to the attention weights after "
                          "the softmax, before @ values")
ONE_HEAD_REPEATED = ("the heads are one module repeated ([head] * num_heads): build num_heads separate "
                     "CausalAttention modules, each with its own weights")
MASK_CHANGED_BY_FORWARD = ("forward changed self.mask (self.mask = self.mask[:T, :T], or an in-place change of the "
                           "buffer): a later, longer input finds the cut or changed mask; cut a view for each call "
                           "(self.mask.bool()[:T, :T]) and leave the buffer as it was built")
P1_WHEN_NOT_TRAINING = ("returned zeros for p = 1 with training=False: check training first: when not training, "
                        "dropout returns x unchanged whatever p")
GPT2_WITH_DROPOUT = ("gpt2_attention() drops attention weights in training mode: build it with dropout=0.0, as its "
                     "docstring says (0.1 is what GPT-2 trains with, not this layer)")

def no_scale(d: int, name: str = "d_k") -> str:
    return f"no scaling: off by a factor √{name} = √{d} in the scores (divide Q Kᵀ by √{name} before the softmax)"


def scaled_by_d_out(d_out: int, head_dim: int) -> str:
    return f"scaled by 1/√d_out = 1/√{d_out}: the scale is 1/√head_dim = 1/√{head_dim}"


def scale_diagnoses(fn: Callable[[float], Any], d_k: int, name: str = "d_k") -> list[tuple[Any, str]]:
    """Alternatives for a wrong 1/√d_k: ``fn(s)`` recomputes the result with the scores multiplied by s
    (the right s is 1/√d_k)."""
    if d_k == 1:  # 1/√1 = 1: no scale, 1/d_k and √d_k all equal the right computation, no mistake among them
        return []
    root = d_k**0.5
    return [(fn(1.0), no_scale(d_k, name)), (fn(1.0 / d_k), f"divided by {name} = {d_k} instead of √{name}"),
            (fn(root), f"multiplied by √{name} instead of dividing")]


def differing(diagnoses: list[tuple[Any, str]], right: Any, atol: float = 1e-6) -> list[tuple[Any, str]]:
    """The ``(alternative, message)`` pairs whose alternative differs from ``right``, the right computation on
    the student's own objects: one equal to it is no mistake there (a scale of 1/√1, no mask on one token),
    and would name any student whose result differs from a document's for another reason."""
    return [(alt, message) for alt, message in diagnoses
            if alt.shape != right.shape or not bool(((alt - right).abs() <= atol).all())]


def error_of(fn: Callable[[], Any]) -> str | None:
    """The text of the error ``fn()`` raises (``Type: message``, as ``call_checked`` reads a student's), or None:
    a known mistake recomputed on the student's own shapes, whose error must be the student's very one."""
    try:
        with warnings.catch_warnings():  # .T on a batch warns: the check's recomputation, not the student's code
            warnings.simplefilter("ignore")
            fn()
    except Exception as err:  # noqa: BLE001 - any error is a text to compare
        return f"{type(err).__name__}: {err}"
    return None


def _told_apart(found: list[tuple[str | None, str]]) -> list[tuple[str, str]]:
    """The (error text, cause) pairs whose text no other cause's mistake raises too: an error two mistakes
    raise alike shows neither."""
    return [(text, cause) for text, cause in found
            if text is not None and all(t != text or c == cause for t, c in found)]


def transpose_errors(queries: Any, keys: Any) -> list[tuple[str, str]]:
    """``call_checked`` errors for ``queries @ keys`` transposed the wrong way on a batch: ``.T`` (all axes
    reversed: BATCH_DOT_T) or ``.transpose(0, 1)`` (AXES_0_1_SWAPPED), each named only for its own error; so are
    torch.dot looped over a batch (DOT_ON_A_BATCH) and torch.sqrt of the int d_k (SQRT_OF_AN_INT)."""
    return _told_apart([(error_of(lambda: queries @ keys.T), BATCH_DOT_T),
                        (error_of(lambda: queries @ keys.transpose(0, 1)), AXES_0_1_SWAPPED),
                        (error_of(lambda: queries @ keys.permute(0, 2, 1)), PERMUTED_THREE_AXES),
                        (error_of(lambda: (queries.mT @ keys).softmax(-1) @ keys), FEATURE_SCORES),
                        (error_of(lambda: torch.dot(keys[0], keys[0])) if keys.dim() > 2 else None, DOT_ON_A_BATCH),
                        (error_of(lambda: torch.sqrt(keys.shape[-1])), SQRT_OF_AN_INT)])


def mask_errors(module: Any, x: Any) -> list[tuple[str, str]]:
    """``call_checked`` errors of an attention module on ``x`` (batch, T, d_in) whose (c, c) mask (the student's
    ``module.mask``: its shape is what is blamed) met the T × T scores uncut (MASK_NOT_CUT) or cut to the
    batch size (TOKENS_FROM_BATCH): the errors masked_fill or an added mask raise there, on the way to
    ``softmax(...) @ values``; scores of (batch, T, T) and, with ``module.num_heads``, (batch, heads, T, T).
    Nothing when the module shows no square mask."""
    try:
        mask, heads = getattr(module, "mask", None), getattr(module, "num_heads", None)
        c = int(mask.shape[-1]) if mask.dim() == 2 and mask.shape[0] == mask.shape[1] else None
    except Exception:  # noqa: BLE001 - no mask, or not a tensor: nothing to blame
        return []
    if c is None:
        return []
    b, t = x.shape[0], x.shape[-2]
    layouts = [(b, t, t)] + ([(b, heads, t, t)] if isinstance(heads, int) and heads > 0 else [])
    found = []
    for shape in layouts:
        scores, values = x.new_zeros(shape), x.new_zeros((*shape[:-1], 1))
        for cut, cause in ((c, MASK_NOT_CUT), (b, TOKENS_FROM_BATCH), (x.shape[-1], TOKENS_FROM_FEATURES)):
            if cut == t or (cause == MASK_NOT_CUT and c < t):  # T × T is the right cut; c < T: no cut helps
                continue
            wrong = x.new_ones((c, c)).triu(1)[:cut, :cut]
            found += [(error_of(lambda: scores.masked_fill(wrong.bool(), float("-inf")).softmax(-1) @ values), cause),
                      (error_of(lambda: (scores + wrong).softmax(-1) @ values), cause)]
    return _told_apart(found)



def not_divisible(raised: BaseException | None) -> str:
    """Why d_out % num_heads != 0 was not refused with ValueError: NOT_DIVISIBLE (its "not assert") only for the
    AssertionError an assert raises, else DIVISIBILITY_NOT_CHECKED."""
    return NOT_DIVISIBLE if isinstance(raised, AssertionError) else DIVISIBILITY_NOT_CHECKED


def too_many_tokens(module: Any, x: Any, context_length: int) -> str:
    """Why ``module`` let ``x`` (more tokens than context_length) through: TOO_MANY_TOKENS, or TOKENS_FROM_BATCH
    where it does raise ValueError for a batch of context_length + 1 inputs of one token (it counts the batch), or
    TOKENS_FROM_FEATURES for one token of context_length + 1 features (a right module fails later, in its nn.Linear)."""
    for probe, cause in ((x[:1, :1].repeat(context_length + 1, 1, 1), TOKENS_FROM_BATCH),
                         (x.new_zeros(1, 1, context_length + 1), TOKENS_FROM_FEATURES)):
        try:
            module(probe)
        except ValueError:
            return cause
        except Exception:  # noqa: BLE001 - another failure: its own test's to report
            pass
    return TOO_MANY_TOKENS


# Issue 38: more of the mistakes students make, each named where a library mistake (tests/mutants/student_mistakes.py)
# reproduces the result, or where the student's objects show it (the functions below).
ELEMENTWISE_NO_SUM = ("multiplied elementwise without summing over the features: a dot product sums the products, "
                      "one number per token (torch.dot(x_i, query), or inputs @ query)")
SCORES_OF_FEATURES = ("computed inputs.T @ inputs, the (d, d) products of the features: the scores are x xᵀ, "
                      "inputs @ inputs.transpose(-2, -1), one row and one column per token (T, T)")
MAX_NAMEDTUPLE = ("scores.max(dim=...) returns a (values, indices) namedtuple, not a tensor: subtract "
                  "scores.amax(dim=dim, keepdim=True), or scores.max(dim=dim, keepdim=True).values")
SUMMED_OVER_FEATURES = ("summed over the features (dim=1), one number per token: the context vector sums over the "
                        "tokens (dim=0), the weighted sum attn_weights @ inputs")
D_K_NOT_LAST_DIM = ("d_k taken from another dimension than the keys' last: d_k = keys.shape[-1], the size of each key "
                    "vector, not keys.shape[0] or keys.shape[-2] (the batch size or the number of tokens)")
COPY_WITHOUT_NO_GRAD = ("copied into a parameter outside torch.no_grad(): an in-place copy_ into a leaf that requires "
                        "grad raises; wrap the copies in `with torch.no_grad():`")
RETURN_ORDER_SWAPPED = ("returned (attn_weights, context): the order is (context, attn_weights), the context "
                        "vectors first")
EVAL_SCALED = ("with training=False the output was scaled (x * (1 - p), the old non-inverted dropout at eval time): "
               "inverted dropout returns x unchanged when not training, the identity")
HEADS_AND_TOKENS_SWAPPED = ("keys.transpose(1, 2) swaps heads and tokens: transpose the keys' last two axes, "
                            "keys.transpose(2, 3) (or (-2, -1)), for (b, h, T, head_dim) @ (b, h, head_dim, T)")
TWO_DIM_D_OUT = ("each head gives d_out features and the wrapper concatenates them: num_heads * d_out = 2 needs "
                 "d_out = 1 per head (Exercise 3.2), not d_out = 2")
HEAD_DIM_IS_D_OUT = ("head_dim = d_out: each head gets d_out // num_heads features, so that (b, T, num_heads, head_dim) "
                     "holds the d_out features (the chapter's listing has this bug: see the group README)")
HEAD_DIM_FLOAT = ("head_dim is a float: d_out / num_heads gives 2.0, and a shape takes ints; use integer division, "
                  "d_out // num_heads")
WEIGHT_NOT_A_PARAMETER = ("a weight kept as a plain tensor (torch.rand(...) without nn.Parameter): it is no parameter, "
                          "so .to() does not convert it and no gradient reaches it; self.W = nn.Parameter(torch.rand(d_in, d_out))")
WEIGHT_SHAPE_SWAPPED = ("a weight's dimensions are swapped (mat1 and mat2 shapes cannot be multiplied): x (..., d_in) @ W "
                        "needs W of shape (d_in, d_out): nn.Parameter(torch.rand(d_in, d_out)); nn.Linear(d_in, d_out) "
                        "(in_features first) stores (d_out, d_in), so call the layer, W_query(x), not x @ W_query.weight")
VIEW_NOT_CONTIGUOUS = ("view() of a transposed tensor: after transpose(1, 2) its memory is not contiguous; "
                       ".contiguous().view(...) or .reshape(...)")

SUM_NOT_SOFTMAX = ("normalized the scores by their sum instead of a softmax: the weights are the softmax of the scores "
                   "along the last dim, the exp of each score over the sum of the exps")
OPERANDS_REVERSED = ("multiplied in the wrong order: the weights come first, attn_weights @ values (attn_weights @ inputs "
                     "for simple attention): each row of weights mixes the rows of the values")
MASK_HIDES_THE_DIAGONAL = ("the mask hides the diagonal too: each token may look at itself; hide only j > i "
                           "(torch.triu(..., diagonal=1) is what is hidden, torch.tril(...) what is kept), or the first "
                           "row is all -inf (NaN)")
MASK_NOT_BOOL = ("masked_fill takes a boolean mask: the buffer holds floats (torch.ones), so convert it: "
                 "self.mask.bool()[:T, :T]")
HEADS_STACKED = ("stacked the heads (torch.stack adds a dimension): concatenate them along the features, "
                 "torch.cat([...], dim=-1)")
CONCAT_ON_BATCH = ("concatenated the heads along the batch (torch.cat's default dim=0): concatenate along the features, "
                   "dim=-1")

SCALED_BY_D_IN_HEADS = ("scaled by 1/√d_in, the input's size: the scale is 1/√head_dim, the size of each head's keys "
                        "(d_out // num_heads)")
DIVIDED_BY_D_K = "divided the scores by d_k instead of √d_k: the scale is 1 / d_k**0.5 (for heads, d_k is head_dim)"
NOT_SCALED = "no scaling: divide the scores by √d_k before the softmax (d_k**0.5)"
SOFTMAX_OVER_DIM_0 = ("softmax over dim 0, the first dim (the batch of a batched input, the columns of a matrix): "
                      "normalize along the last dim, dim=-1")
MASK_FROM_RAND = ("drew the keep-mask by comparing torch.rand(...) with p: the right odds, but not the draw "
                  "torch.nn.Dropout makes under the same seed; draw it with torch.empty_like(x).bernoulli_(1 - p), as the "
                  "docstring says")

OUT_PROJ_FROM_D_IN = "out_proj maps the merged heads, d_out features, to d_out: nn.Linear(d_out, d_out), not nn.Linear(d_in, ...)"
SPLIT_NOT_TRANSPOSED = ("split without moving the head axis: after the view to (b, T, num_heads, head_dim), transpose(1, 2) "
                        "gives (b, num_heads, T, head_dim)")
MULTIPLIED_BY_1_MINUS_P = ("multiplied the survivors by 1 - p: inverted dropout divides them by 1 - p, so that the expected "
                           "value stays x")

DROPOUT_ON_THE_OUTPUT = ("applied dropout to the output (the context vectors): apply it to the attention weights after "
                         "the softmax, before @ values")
TWO_DIM_ONE_HEAD = ("one head with d_out = 2: Exercise 3.2 keeps num_heads=2 and gives each head d_out = 1, so that the "
                    "two heads' outputs, concatenated, are two-dimensional")
MASKED_WITH_PLUS_INF = ("masked with +inf: the hidden scores must be -inf, whose exp is 0 (exp(+inf) is inf, and inf / inf "
                        "is NaN)")
SCORES_AS_A_COLUMN = ("returned a column (T, 1): with a 1-D query, inputs @ query is already one score per token, shape (T,)")
WEIGHTS_NOT_BROADCAST = ("the weights (T,) broadcast against the features, not the tokens: attn_weights[:, None] * inputs, "
                         "summed over dim 0, or simply attn_weights @ inputs")
D_K_FROM_VALUES = ("d_k taken from the values: d_k = keys.shape[-1], the size of the keys (the values' size d_v may "
                   "differ)")
TENSOR_ASSIGNED_TO_A_PARAMETER = ("assigned a tensor to a parameter's attribute (nn.Module takes only an nn.Parameter "
                                  "there): copy the values into the existing parameter, param.copy_(...) under "
                                  "torch.no_grad()")

RENORMALIZED_WITH_A_SOFTMAX = ("renormalized with a softmax: the masked weights are already probabilities (the zeros "
                               "become exp(0) = 1 again); divide each row by its sum, sum(dim=-1, keepdim=True)")
ONE_HEAD_RETURNED = "returned one head's output: concatenate every head's output along the features (torch.cat, dim=-1)"


# --- Groups 01-03 (issue 38, item 3): causes of a whole family, each recomputed from the student's own objects ---
SUMMED_OVER_TOKENS = "summed over the tokens (dim 0): a score is one number per token, the dot product over the features, inputs @ query"
PERMUTED_THREE_AXES = "permute(0, 2, 1) names three axes: it fails on a matrix or a batch of batches; swap the last two with .transpose(-2, -1)"
RETURNED_THE_WEIGHTS = "returned the attention weights: the context vectors are the weights times the inputs, attn_weights @ inputs"
VALUES_FROM_KEYS = "multiplied the weights by the keys: the context vectors are attn_weights @ values"
MASK_HIDES_THE_PAST = "the mask hides the past (below the diagonal), not the future: hide j > i, torch.triu(torch.ones(T, T), diagonal=1)"
MASK_SHOWS_THE_NEXT = "the mask lets each token see the next one too (one off the diagonal): hide every j > i, torch.triu(..., diagonal=1)"
FULL_CONTEXT_REFUSED = "refused exactly context_length tokens: only more is an error (num_tokens > context_length, not >=)"
TOKENS_FROM_FEATURES = "the number of tokens was read from the features: x.shape[-1] is d_in; the tokens are T = x.shape[-2]"
DOT_ON_A_BATCH = ("torch.dot takes two 1-D vectors: a loop over a batch's first axis hands it whole matrices; one product "
                  "does every pair and keeps leading dims, inputs @ inputs.transpose(-2, -1)")
SQRT_OF_AN_INT = "torch.sqrt takes a tensor, not a Python int (d_k = keys.shape[-1] is one): divide by d_k ** 0.5 (or math.sqrt(d_k))"
SIZED_BY_FEATURES = "a tensor of d entries (the features) was indexed by token: one score per token needs T = inputs.shape[0] entries"
SIZED_BY_TOKENS = ("a (T,) tensor, one entry per token (e.g. torch.zeros(attn_weights.shape)), met a row of inputs: the context "
                   "vector has one entry per feature, torch.zeros(inputs.shape[-1]) (the document's query.shape)")
P1_RETURNS_X = "returned x unchanged at p = 1 in training mode: p = 1 drops every element, so return zeros"
DROPOUT_ON_VALUES = "applied dropout to the values: apply it to the attention weights after the softmax, then @ values"
COPIED_ANOTHER_LAYER = "copied one layer's weight into another (W_query's into W_key, say): copy each weight into its namesake"
FLOAT_MASK = "masked_fill takes a boolean mask: make it with dtype=torch.bool, or convert a 0/1 float mask with .bool()"
FEATURE_SCORES = ("the scores are (d_out, d_out), features by features (a transpose on the wrong operand): they are "
                  "queries @ keys.transpose(-2, -1), (T, T), one row and one column per token")
DIVIDED_BY_1_MINUS_P_LATE = "divided by 1, then subtracted p (x * keep / 1 - p): put 1 - p in parentheses, x * keep / (1 - p)"


def reshaped(got: Any, diagnoses: Any) -> list[str]:
    """The messages of ``diagnoses`` whose alternative has ``got``'s shape and values (within 1e-4), for a ``got`` not of
    the expected shape: the premise (it differs from the right result) is the shape itself."""
    try:
        return [m for alt, m in diagnoses if alt is not None and tuple(alt.shape) == tuple(got.shape)
                and bool(got.detach().double().isclose(alt.detach().double(), atol=1e-4, rtol=0, equal_nan=True).all())]
    except Exception:  # noqa: BLE001 - not a tensor, or alternatives that cannot be compared: nothing shown
        return []


def attention_grid(q: Any, k: Any, v: Any, scale: float, hide: Any = None) -> list[tuple[Any, str]]:
    """Attention recomputed from the student's own projections with one slip each (``hide``: the (T, T) bool mask of
    what is hidden, or None): softmax over the queries, K Qᵀ, the keys for the values, the scale after the softmax;
    with a mask, the mask on the past, over the diagonal, one off, or zeros for -inf. A slip these shapes cannot
    compute is left out; ``differing`` leaves out one equal to the right result."""
    def att(q_=q, k_=k, v_=v, mask=hide, fill=float("-inf"), dim=-1, after=False):
        try:
            scores = q_ @ k_.transpose(-2, -1)
            scores = scores if mask is None else scores.masked_fill(mask, fill)
            return ((scores * (1.0 if after else scale)).softmax(dim) * (scale if after else 1.0)) @ v_
        except RuntimeError:  # shapes this slip cannot multiply: its own error, not this result
            return None
    slips = [({"dim": -2}, WRONG_DIM), ({"q_": k, "k_": q}, KEYS_TIMES_QUERIES), ({"v_": k}, VALUES_FROM_KEYS),
             ({"after": True}, SCALED_AFTER_SOFTMAX)]
    if hide is not None:  # hide: True above the diagonal; ~hide.mT also hides the diagonal
        slips += [({"mask": hide.mT}, MASK_HIDES_THE_PAST), ({"mask": ~hide.mT}, MASK_HIDES_THE_DIAGONAL),
                  ({"mask": hide.triu(2)}, MASK_SHOWS_THE_NEXT), ({"fill": 0.0}, MASKED_WITH_ZEROS)]
    return [(alt, message) for change, message in slips if (alt := att(**change)) is not None]


def named_parameter_causes(module: Any, weights: tuple[str, ...] = ("W_query", "W_key", "W_value")) -> list[str]:
    """What the student's module itself shows about its parameters (read from its objects, never its source): a
    weight among ``weights`` kept as a plain tensor attribute instead of an nn.Parameter."""
    try:
        params = {name for name, _ in module.named_parameters()}
        plain = [name for name in weights if name not in params and hasattr(vars(module).get(name), "requires_grad")]
    except Exception:  # noqa: BLE001 - a module that cannot say: no cause
        return []
    return [f"{', '.join(plain)}: {WEIGHT_NOT_A_PARAMETER}"] if plain else []


# Issue 38, group 04 and the raw errors: causes read from the student's objects where PyTorch's error names none.
PARAMETERS_FROZEN = "requires_grad is False: such a parameter is never trained; leave it as nn.Parameter / nn.Linear make it (no requires_grad_(False))"
HEADS_REVERSED = "concatenated the heads in reverse order: head 0's output comes first, torch.cat([head(x) for head in self.heads], dim=-1)"
OUT_PROJ_BEFORE_MERGE = "applied out_proj to the heads before merging them: merge (b, num_heads, T, head_dim) into (b, T, d_out) first, then out_proj"
LINEAR_IN_FEATURES = "{names}: nn.Linear({i}, {o}) was given inputs of another size (mat2 {i}x{o} is its weight, transposed): {fix}"
FROM_D_IN = "W_query, W_key and W_value map x's d_in = {d} features: nn.Linear(d_in, d_out)"
OUT_PROJ_SQUARE = "out_proj maps the merged heads' d_out features to d_out: nn.Linear(d_out, d_out)"
LAYERS_NAMED_OTHERWISE = "the layers are named otherwise: {names}: the documents' names, which the tests find them by"
SAME_RESULT = "one of these, which give the same result here: "


def together(causes: list[str]) -> list[str]:
    """Causes whose alternatives all reproduce one result cannot be told apart there: said in one line, each once (a
    group said together already is opened), so that none reads as the cause where another gives the same result."""
    parts = dict.fromkeys(p for c in causes for p in (c[len(SAME_RESULT):].split("; or ") if c.startswith(SAME_RESULT) else [c]))
    return [SAME_RESULT + "; or ".join(parts)] if len(parts) > 1 else list(parts)


def gradient_causes(module: Any, out: Any, used: list[str] | None = None) -> list[str]:
    """Why no gradient reaches the parameters ``used`` (or, with None, ``out`` has no graph): PARAMETERS_FROZEN, NO_GRADIENT."""
    try:
        frozen = [name for name, p in module.named_parameters() if not p.requires_grad]
        graph = used is None and getattr(out, "grad_fn", None) is not None  # out has a graph: nothing to explain
        names = [] if graph else [name for name, _ in module.named_parameters()] if used is None else list(used)
    except Exception:  # noqa: BLE001 - a module that cannot say: no cause
        return []
    shown = [name for name in names if name in frozen]
    return [f"{', '.join(shown)}: {PARAMETERS_FROZEN}"] * bool(shown) + [NO_GRADIENT] * any(n not in frozen for n in names)


def layer_errors(module: Any, x: Any = None, *_: Any) -> list[tuple[str, str]]:
    """``call_checked`` errors of the student's module on ``x``: ``mat1 and mat2 shapes cannot be multiplied (Nxk and
    INxOUT)`` names a layer of that (in, out) whose own size is wrong (LINEAR_IN_FEATURES: W_query, W_key, W_value not
    from x's d_in, an out_proj not square), and a dtype mismatch any modules held in a plain list (MODULES_IN_A_PLAIN_LIST)."""
    try:
        wrong: dict[tuple[str, Any, Any, str], list[str]] = {}
        for name, sub in module.named_modules():
            i, o, last = getattr(sub, "in_features", None), getattr(sub, "out_features", None), name.split(".")[-1]
            fix = (FROM_D_IN.format(d=x.shape[-1]) if last in ("W_query", "W_key", "W_value") and i != x.shape[-1]
                   else OUT_PROJ_SQUARE if last == "out_proj" and i != o else "")
            hd = getattr(module, "head_dim", None) if last == "out_proj" and not fix else None  # a right out_proj given
            if fix or isinstance(hd, int) and hd != o:  # the heads unmerged: their head_dim features
                wrong.setdefault((f" and {i}x{o})", i, o, fix) if fix else (f"x{hd} and {o}x{o})", i, o, ""), []).append(name)
        listed = any(isinstance(v, (list, tuple)) and any(hasattr(i, "parameters") and list(i.parameters()) for i in v)
                     for sub in module.modules() for v in vars(sub).values())
    except Exception:  # noqa: BLE001 - a module that cannot say: no cause
        return []
    return [(pattern, LINEAR_IN_FEATURES.format(names=", ".join(n), i=i, o=o, fix=fix) if fix else OUT_PROJ_BEFORE_MERGE)
            for (pattern, i, o, fix), n in wrong.items()] + [("same dtype", MODULES_IN_A_PLAIN_LIST)] * listed


# Issue 38, group 03: dropout's bounds, read from the student's own function.
P_BOUND_REFUSED = "refused p = 0 or p = 1: [0, 1] includes its bounds (p = 0: x unchanged; p = 1: zeros); raise only for p < 0 or p > 1"


def bound_refused(fn: Callable[..., Any], x: Any, p: float, *_: Any) -> list[tuple[str, str]]:
    """``call_checked`` errors of ``dropout(x, p)`` at p = 0 or 1: its ValueError is the bounds excluded (0 < p < 1)
    where the same function takes p = 0.5."""
    return [] if p not in (0, 1) or error_of(lambda: fn(x, 0.5)) else [("ValueError:", P_BOUND_REFUSED)]
