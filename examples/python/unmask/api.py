"""A Pythonic API over the C ABI: Model, Engine, Request, Tokenizer, plan(), exceptions mapped
from the status codes. Prompts are token ids or text (chat-formatted by default)."""
import ctypes
import json
import queue
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _ffi
from ._ffi import lib

Prompt = Union[str, Sequence[int]]


class UnmaskError(Exception):
    """A failed call: `status` is the status name (e.g. "OUT_OF_BUDGET"), `code` its number."""

    def __init__(self, code: int, what: str, message: str):
        self.code = code
        self.status = _ffi.STATUS_NAMES.get(code, str(code))
        self.message = message
        super().__init__("%s: %s: %s" % (what, self.status, message))


class InvalidArgument(UnmaskError, ValueError):
    pass


class Unsupported(UnmaskError):
    pass


class ModelFormatError(UnmaskError):
    pass


class ModelIOError(UnmaskError, OSError):
    pass


class OutOfBudget(UnmaskError, MemoryError):
    pass


class QueueFull(UnmaskError):
    pass


class TooLong(UnmaskError, ValueError):
    pass


_ERRORS = {1: InvalidArgument, 2: Unsupported, 3: ModelFormatError, 4: ModelIOError, 5: OutOfBudget, 6: QueueFull,
           9: TooLong}


def _check(code: int, what: str) -> None:
    if code != _ffi.OK:
        raise _ERRORS.get(code, UnmaskError)(code, what, lib.unmask_last_error().decode("utf-8", "replace"))


def _sized(struct_type):
    value = struct_type()
    value.struct_size = ctypes.sizeof(struct_type)
    return value


def _as_dict(struct) -> Dict[str, Any]:
    out = {}
    for name, _ in struct._fields_:
        if name == "struct_size":
            continue
        value = getattr(struct, name)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, ctypes.Array):
            value = list(value)
        out[name] = value
    return out


def _ids(values: Sequence[int]):
    return (ctypes.c_int32 * len(values))(*values)


def _read_ids(fill, what: str) -> List[int]:
    """Calls fill(buffer, capacity, count) until the buffer held everything."""
    capacity, count = 256, ctypes.c_int64(0)
    while True:
        buffer = (ctypes.c_int32 * capacity)()
        _check(fill(buffer, capacity, ctypes.byref(count)), what)
        if count.value <= capacity:
            return list(buffer[:count.value])
        capacity = count.value


def _read_text(fill, what: str) -> str:
    """The same for text (outputs such as the metrics may grow between calls)."""
    capacity, length = 1024, ctypes.c_int64(0)
    while True:
        buffer = ctypes.create_string_buffer(capacity)
        _check(fill(buffer, capacity, ctypes.byref(length)), what)
        if length.value <= capacity:
            return buffer.raw[:length.value].decode("utf-8", "replace")
        capacity = length.value


def parameter_names() -> List[str]:
    """The generation parameters settable by name, from the library's table, in field order."""
    names = []
    for index in range(lib.unmask_generate_param_count()):
        info = _sized(_ffi.ParameterInfo)
        _check(lib.unmask_generate_param_info(index, ctypes.byref(info)), "unmask_generate_param_info")
        names.append(info.name.decode())
    return names


def generate_params(**settings) -> _ffi.GenerateParams:
    """unmask_generate_params from keyword arguments named as the library's parameters (`policy`,
    `cache_mode` and `cache_precision` also by name), each checked by the library
    (unmask_generate_params_set); `steps` defaults to `gen_length`. An unknown name is a
    TypeError, a bad value an InvalidArgument (a ValueError)."""
    params = _ffi.GenerateParams()
    _check(lib.unmask_generate_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)), "unmask_generate_params_init_sized")
    known = parameter_names()
    for name, value in settings.items():
        if name not in known:
            raise TypeError("%r is not a generation parameter (known: %s)" % (name, ", ".join(known)))
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        _check(lib.unmask_generate_params_set(ctypes.byref(params), name.encode(), text.encode()),
               "unmask_generate_params_set")
    if "steps" not in settings:
        params.steps = params.gen_length
    return params


def _enum_value(enumeration: int, value: Union[str, int]) -> int:
    if not isinstance(value, str):
        return value
    out = ctypes.c_int32()
    _check(lib.unmask_enum_value(enumeration, value.encode(), ctypes.byref(out)), "unmask_enum_value")
    return out.value


def _enum_name(enumeration: int, value: int) -> str:
    name = lib.unmask_enum_name(enumeration, value)
    return name.decode() if name is not None else "?"


@dataclass
class Result:
    """One finished generation."""
    text: str
    ids: List[int]
    finish_reason: str
    steps: int
    forwards: int
    timings: Dict[str, float] = field(default_factory=dict)


def _chat_arguments(messages, tools):
    """The C array of `messages` and the tools as JSON (None for none). The strings the array points to
    are kept alive by the array itself (ctypes keeps c_char_p fields' bytes)."""
    array = (_ffi.ChatMessage * len(messages))()
    for slot, message in zip(array, messages):
        unknown = set(message) - {"role", "content", "tool_calls", "tool_call_id", "name"}
        if unknown or "role" not in message:
            raise InvalidArgument(1, "apply_chat_template", "a message is {role, content, tool_calls, tool_call_id, "
                                  "name}, got keys %s" % sorted(message))
        slot.struct_size = ctypes.sizeof(_ffi.ChatMessage)
        slot.role = message["role"].encode()
        content = message.get("content")
        slot.content = content.encode() if content is not None else None
        calls = message.get("tool_calls")
        slot.tool_calls = json.dumps(calls).encode() if calls else None
        slot.tool_call_id = message["tool_call_id"].encode() if message.get("tool_call_id") else None
        slot.name = message["name"].encode() if message.get("name") else None
    return array, (json.dumps(list(tools)).encode() if tools else None)


class Tokenizer:
    """A model's tokenizer (owned by the model)."""

    def __init__(self, handle: ctypes.c_void_p, owner: "Model"):
        self._handle, self._owner = handle, owner

    def encode(self, text: str, add_special_tokens: bool = False) -> List[int]:
        data = text.encode()
        return _read_ids(lambda b, c, n: lib.unmask_tokenize(self._handle, data, len(data), int(add_special_tokens), b,
                                                             c, n), "unmask_tokenize")

    def encode_chat(self, user: str, system: Optional[str] = None) -> List[int]:
        """A chat prompt in the tokenizer's format, ending where the assistant's answer begins."""
        s = system.encode() if system else None
        return _read_ids(lambda b, c, n: lib.unmask_tokenize_chat(self._handle, s, user.encode(), b, c, n),
                         "unmask_tokenize_chat")

    def has_chat_format(self) -> bool:
        """Whether the model has a chat template (or a chat format unmask knows)."""
        has = ctypes.c_int32()
        _check(lib.unmask_tokenizer_has_chat_format(self._handle, ctypes.byref(has)), "unmask_tokenizer_has_chat_format")
        return has.value == 1

    def apply_chat_template(self, messages: Sequence[Dict[str, Any]], tools: Optional[Sequence[Dict[str, Any]]] = None,
                            add_generation_prompt: bool = True) -> str:
        """The prompt text of a conversation, rendered by the model's chat template: `messages` as OpenAI's
        ({"role", "content", "tool_calls", "tool_call_id", "name"}), `tools` as OpenAI's tool definitions."""
        array, tools_json = _chat_arguments(messages, tools)
        return _read_text(lambda b, c, n: lib.unmask_apply_chat_template(self._handle, array, len(array), tools_json,
                                                                         int(add_generation_prompt), b, c, n),
                          "unmask_apply_chat_template")

    def encode_messages(self, messages: Sequence[Dict[str, Any]], tools: Optional[Sequence[Dict[str, Any]]] = None,
                        add_generation_prompt: bool = True) -> List[int]:
        """The ids of apply_chat_template's text."""
        array, tools_json = _chat_arguments(messages, tools)
        return _read_ids(lambda b, c, n: lib.unmask_tokenize_messages(self._handle, array, len(array), tools_json,
                                                                      int(add_generation_prompt), b, c, n),
                         "unmask_tokenize_messages")

    def vocab_size(self) -> int:
        """One past the highest id the tokenizer knows; decode() skips ids beyond."""
        size = ctypes.c_int64()
        _check(lib.unmask_tokenizer_vocab_size(self._handle, ctypes.byref(size)), "unmask_tokenizer_vocab_size")
        return size.value

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        array = _ids(ids)
        return _read_text(lambda b, c, n: lib.unmask_detokenize(self._handle, array, len(ids), int(skip_special_tokens),
                                                                b, c, n), "unmask_detokenize")


class _Owned:
    """A library handle freed once: by close(), at the end of a `with` block, or when collected."""

    _handle = None

    def close(self) -> None:
        if self._handle:
            self._free(self._handle)
            self._handle = None

    def _free(self, handle) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Model(_Owned):
    """A loaded model (immutable, thread-safe). Use `Model.load(path)`; close() or a `with` block
    frees it (engines over it must be closed first)."""

    def __init__(self, handle: ctypes.c_void_p):
        self._handle = handle
        self._engines = weakref.WeakSet()  # engines over this model: it must outlive them

    @classmethod
    def load(cls, path: str, precision: str = "auto", memory_budget_bytes: int = 0,
             quantize_embeddings: bool = False, devices: int = 1) -> "Model":
        """`quantize_embeddings`: at int8, q4 or fp8, quantize the embedding and the LM head too.
        `devices`: host devices sharing the model (docs/parallel.md)."""
        params = _ffi.ModelParams()
        _check(lib.unmask_model_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)), "unmask_model_params_init_sized")
        params.precision = _enum_value(_ffi.ENUM_PRECISION, precision)
        params.quantize_embeddings = int(quantize_embeddings)
        params.devices = devices
        params.memory_budget_bytes = memory_budget_bytes
        handle = ctypes.c_void_p()
        _check(lib.unmask_model_load(str(path).encode(), ctypes.byref(params), ctypes.byref(handle)),
               "unmask_model_load")
        return cls(handle)

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._handle:
            raise InvalidArgument(1, "Model", "the model was closed")
        return self._handle

    def info(self) -> Dict[str, Any]:
        out = _sized(_ffi.ModelDescription)
        _check(lib.unmask_model_info(self.handle, ctypes.byref(out)), "unmask_model_info")
        return _as_dict(out)

    @property
    def tokenizer(self) -> Tokenizer:
        handle = ctypes.c_void_p()
        _check(lib.unmask_model_tokenizer(self.handle, ctypes.byref(handle)), "unmask_model_tokenizer")
        if not handle:
            raise Unsupported(2, "unmask_model_tokenizer", "the model has no tokenizer")
        return Tokenizer(handle, self)

    def prompt_ids(self, prompt: Prompt, chat: bool = True) -> List[int]:
        if isinstance(prompt, str):
            return self.tokenizer.encode_chat(prompt) if chat else self.tokenizer.encode(prompt)
        return list(prompt)

    def generate(self, prompt: Prompt, chat: bool = True, **settings) -> Result:
        """Generates synchronously (see generate_params for the settings)."""
        params = generate_params(**settings)
        ids = self.prompt_ids(prompt, chat)
        tokens = (ctypes.c_int32 * max(params.gen_length, 1))()
        result = _sized(_ffi.Generation)
        result.tokens, result.tokens_capacity = tokens, max(params.gen_length, 1)
        _check(lib.unmask_generate(self.handle, ctypes.byref(params), _ids(ids), len(ids), ctypes.byref(result)),
               "unmask_generate")
        out = list(tokens[:result.token_count])
        return Result(self._answer(out), out, _enum_name(_ffi.ENUM_FINISH_REASON, result.finish_reason), result.steps,
                      result.forwards)

    def _answer(self, ids: List[int]) -> str:
        """The text up to the first EOS, special tokens skipped (as unmask_request_text)."""
        eos = self.info()["eos_token_id"]
        if eos in ids:
            ids = ids[:ids.index(eos)]
        try:
            return self.tokenizer.decode(ids, skip_special_tokens=True)
        except Unsupported:
            return ""

    def close(self) -> None:
        """Frees the model; InvalidArgument while an engine over it is open (close it first)."""
        if any(engine._handle for engine in self._engines):
            raise InvalidArgument(1, "Model.close", "an engine over this model is still open; close it first")
        super().close()

    def _free(self, handle) -> None:
        lib.unmask_model_free(handle)


class Request(_Owned):
    """A submitted request; dropping it cancels it if it still runs. It keeps its engine (and so
    the model) alive."""

    def __init__(self, handle: ctypes.c_void_p, engine: "Engine", callback, events: "queue.Queue"):
        self._handle, self._engine, self._callback, self._events = handle, engine, callback, events

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the request has its outcome; False when `timeout` seconds passed first."""
        code = lib.unmask_request_wait(self._handle, -1.0 if timeout is None else timeout)
        if code == _ffi.ERR_TIMEOUT:
            return False
        _check(code, "unmask_request_wait")
        return True

    def cancel(self) -> None:
        _check(lib.unmask_request_cancel(self._handle), "unmask_request_cancel")

    def stop(self) -> None:
        """The answer has ended (a stop string, say): stop it, with outcome EOS."""
        _check(lib.unmask_request_stop(self._handle), "unmask_request_stop")

    def info(self) -> Dict[str, Any]:
        out = _sized(_ffi.RequestInfo)
        _check(lib.unmask_request_info_get(self._handle, ctypes.byref(out)), "unmask_request_info_get")
        return _as_dict(out)

    def result(self) -> Result:
        """Waits, then the answer (an error outcome raises the request's failure)."""
        self.wait()
        info = self.info()
        if info["finish_reason"] == 5:
            raise _ERRORS.get(info["error_status"], UnmaskError)(info["error_status"], "request", "the request failed")
        ids = _read_ids(lambda b, c, n: lib.unmask_request_tokens(self._handle, b, c, n), "unmask_request_tokens")
        try:
            text = _read_text(lambda b, c, n: lib.unmask_request_text(self._handle, b, c, n), "unmask_request_text")
        except Unsupported:
            text = ""
        timings = {k: info[k] for k in ("queue_seconds", "compute_seconds", "first_block_seconds", "end_to_end_seconds")}
        return Result(text, ids, _enum_name(_ffi.ENUM_FINISH_REASON, info["finish_reason"]), info["steps"], info["forwards"],
                      timings)

    def events(self) -> Iterator[Dict[str, Any]]:
        """The streamed events (dicts with kind "block" or "step", step, completed_blocks,
        committed, tokens) until the request ends."""
        if self._events is None:
            raise InvalidArgument(1, "Request.events", "the request was submitted without stream=True")
        while True:
            try:
                yield self._events.get(timeout=0.02)
            except queue.Empty:
                if self.wait(0):  # finished: every event was queued before the outcome
                    while not self._events.empty():
                        yield self._events.get()
                    return

    def _free(self, handle) -> None:
        lib.unmask_request_free(handle)  # no callback runs after this returns


class Engine(_Owned):
    """Concurrent requests over one model, batched per step; submit from any thread."""

    def __init__(self, model: Model, max_concurrent_requests: int = 8, max_queued_requests: int = 64, threads: int = 0,
                 request_timeout_seconds: float = 0.0):
        self._handle = None
        params = _ffi.EngineParams()
        _check(lib.unmask_engine_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)), "unmask_engine_params_init_sized")
        params.max_concurrent_requests = max_concurrent_requests
        params.max_queued_requests = max_queued_requests
        params.threads = threads
        params.request_timeout_seconds = request_timeout_seconds
        handle = ctypes.c_void_p()
        _check(lib.unmask_engine_create(model.handle, ctypes.byref(params), ctypes.byref(handle)),
               "unmask_engine_create")
        self._handle, self.model = handle, model
        model._engines.add(self)

    def submit(self, prompt: Prompt, chat: bool = True, stream: bool = False, wait_seconds: float = 0.0,
               **settings) -> Request:
        """Queues a prompt; with stream=True, Request.events() yields its committed blocks (and
        steps, with stream_steps=1)."""
        params = generate_params(**settings)
        events = callback = None
        if stream:
            events = queue.Queue()

            def on_event(event_pointer, _):  # on the engine's thread; it only queues the event
                try:
                    e = event_pointer.contents
                    events.put({"kind": "block" if e.kind == _ffi.STREAM_BLOCK else "step", "step": e.step,
                                "completed_blocks": e.completed_blocks, "committed": e.committed,
                                "tokens": e.tokens[:e.token_count]})
                    return 0
                except BaseException:  # never into C: cancel the request instead
                    return 1

            callback = _ffi.STREAM_CALLBACK(on_event)
            params.stream_callback = callback
        ids = self.model.prompt_ids(prompt, chat)
        handle = ctypes.c_void_p()
        _check(lib.unmask_engine_submit(self._handle, ctypes.byref(params), _ids(ids), len(ids), wait_seconds,
                                        ctypes.byref(handle)), "unmask_engine_submit")
        return Request(handle, self, callback, events)

    def generate(self, prompt: Prompt, chat: bool = True, **settings) -> Result:
        request = self.submit(prompt, chat, **settings)
        try:
            return request.result()
        finally:
            request.close()

    def stats(self) -> Dict[str, Any]:
        out = _sized(_ffi.EngineStats)
        _check(lib.unmask_engine_stats_get(self._handle, ctypes.byref(out)), "unmask_engine_stats_get")
        return _as_dict(out)

    def metrics(self) -> str:
        """The stats in the Prometheus text format."""
        return _read_text(lambda b, c, n: lib.unmask_engine_metrics(self._handle, b, c, n), "unmask_engine_metrics")

    def _free(self, handle) -> None:
        lib.unmask_engine_free(handle)


def plan(path: str, max_concurrent: int = 1, max_sequence_length: int = 0, memory_budget_bytes: int = 0,
         kv_cache: bool = False, cfg: bool = False, threads: int = 0,
         kv_cache_precision: Union[str, int] = "fp32") -> Dict[str, Any]:
    """What a deployment of the model at `path` needs, from its config alone (see unmask_plan);
    `kv_cache_precision` "fp32" or "bf16" (which implies `kv_cache`, as `unmask plan` does)."""
    params = _ffi.PlanParams()
    _check(lib.unmask_plan_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)), "unmask_plan_params_init_sized")
    params.max_concurrent, params.max_sequence_length = max_concurrent, max_sequence_length
    params.memory_budget_bytes, params.kv_cache, params.cfg, params.threads = memory_budget_bytes, int(kv_cache), \
        int(cfg), threads
    kv_cache_precision = _enum_value(_ffi.ENUM_PRECISION, kv_cache_precision)
    params.kv_cache_precision = kv_cache_precision
    if kv_cache_precision != _ffi.PRECISION_FP32:
        params.kv_cache = 1
    out = _sized(_ffi.MemoryPlan)
    _check(lib.unmask_plan(str(path).encode(), ctypes.byref(params), ctypes.byref(out)), "unmask_plan")
    return _as_dict(out)


def version() -> str:
    return lib.unmask_version_string().decode()
