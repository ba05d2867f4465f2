"""The Python bindings against a freshly built libunmask and the bundled model. Run from
examples/python with UNMASK_LIBRARY_PATH set: python3 -m unittest discover -s tests"""
import ctypes
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import unmask  # noqa: E402
from unmask import _ffi  # noqa: E402

BUNDLED = os.environ.get("UNMASK_BUNDLED_MODEL") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "models", "toolcall-llada-3m")


class Layout(unittest.TestCase):
    def test_structs_match_the_frozen_c_layouts(self):
        # The sizes tests/unit/test_struct_layout.cpp freezes for the C header.
        sizes = {_ffi.ModelParams: 112, _ffi.PlanParams: 88, _ffi.MemoryPlan: 200, _ffi.GenerateParams: 240,
                 _ffi.EngineParams: 80, _ffi.RequestInfo: 80, _ffi.EngineStats: 240, _ffi.ModelDescription: 120,
                 _ffi.ParameterInfo: 64}
        for struct, size in sizes.items():
            self.assertEqual(ctypes.sizeof(struct), size, struct.__name__)
        self.assertEqual(_ffi.GenerateParams.cache_mode.offset, 196)
        self.assertEqual(_ffi.GenerateParams.stream_steps.offset, 192)
        self.assertEqual(_ffi.ModelDescription.diffusion_block_size.offset, 104)
        self.assertEqual(_ffi.ModelDescription.fingerprint.offset, 112)
        # Offsets tests/unit/test_struct_layout.cpp freezes (fields of equal size could swap unseen).
        offsets = {(_ffi.ModelParams, "memory_budget_bytes"): 56, (_ffi.ModelParams, "memory_margin"): 72,
                   (_ffi.ModelParams, "device"): 80, (_ffi.ModelParams, "quantize_embeddings"): 88,
                   (_ffi.ModelParams, "device_ids"): 96, (_ffi.ModelParams, "devices"): 104,
                   (_ffi.PlanParams, "quantize_embeddings"): 80,
                   (_ffi.PlanParams, "memory_budget_bytes"): 32, (_ffi.PlanParams, "memory_margin"): 48,
                   (_ffi.MemoryPlan, "weights_by_component"): 72, (_ffi.MemoryPlan, "max_length_at_concurrency"): 192,
                   (_ffi.EngineParams, "min_steps"): 40, (_ffi.EngineParams, "log_level"): 72,
                   (_ffi.RequestInfo, "queue_seconds"): 48, (_ffi.RequestInfo, "end_to_end_seconds"): 72,
                   (_ffi.EngineStats, "memory_capacity"): 192, (_ffi.StreamEvent, "tokens"): 40,
                   (_ffi.StreamEvent, "token_count"): 48, (_ffi.GenerateParams, "seed"): 112,
                   (_ffi.GenerateParams, "step_callback"): 152, (_ffi.Generation, "forwards"): 40,
                   (_ffi.GenerateParams, "cache_precision"): 216, (_ffi.PlanParams, "kv_cache_precision"): 72}
        for (struct, name), offset in offsets.items():
            self.assertEqual(getattr(struct, name).offset, offset, "%s.%s" % (struct.__name__, name))
        self.assertEqual(ctypes.sizeof(_ffi.StreamEvent), 56)
        self.assertEqual(ctypes.sizeof(_ffi.ChatMessage), 48)
        self.assertEqual(_ffi.ChatMessage.name.offset, 40)
        self.assertEqual(ctypes.sizeof(_ffi.Generation), 48)
        self.assertEqual(_ffi.lib.unmask_abi_version() >> 16, 1)


class Bindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = unmask.Model.load(BUNDLED)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_errors_map_to_exceptions_with_the_status(self):
        with self.assertRaises(unmask.ModelIOError) as caught:
            unmask.Model.load("/nonexistent/unmask-model")
        self.assertEqual(caught.exception.status, "IO")
        self.assertIn("/nonexistent/unmask-model", str(caught.exception))
        with self.assertRaises(unmask.InvalidArgument) as caught:
            self.model.generate("hi", block_length=12)  # a block diffusion model decodes in its own blocks only
        self.assertIn("block_length 12 differs from the model's diffusion block size 16", caught.exception.message)
        self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaises(TypeError):
            unmask.generate_params(gen_lenght=8)
        with self.assertRaises(ValueError):
            unmask.generate_params(cache_mode="triple")
        with self.assertRaises(unmask.TooLong):
            self.model.generate([1, 2, 3], gen_length=100000)

    def test_parameters_by_name_are_the_library_s(self):
        names = unmask.parameter_names()
        self.assertEqual(names[0], "policy")
        self.assertIn("cache_refresh_steps", names)
        params = unmask.generate_params(gen_length=24, threshold=0.9, cache_mode="dual", early_stop=True,
                                        policy="random", cache_precision="bf16")
        self.assertEqual((params.gen_length, params.steps, params.threshold, params.cache_mode, params.early_stop,
                          params.policy, params.cache_precision), (24, 24, 0.9, 2, 1, 1, 2))
        with self.assertRaises(unmask.InvalidArgument) as caught:
            unmask.generate_params(threshold=1.5)
        self.assertIn("threshold must be in [0, 1], got 1.5", caught.exception.message)

    def test_model_info_tokenizer_and_plan(self):
        info = self.model.info()
        self.assertEqual(info["architecture"], "llada")
        self.assertEqual(info["parameters_total"], 2756864)
        self.assertRegex(info["fingerprint"], r"^sha256sums:[0-9a-f]{64}$")  # the bundled model has SHA256SUMS
        tokenizer = self.model.tokenizer
        text = "Convert 3967 EUR to GBP. " * 100  # 2500 bytes: longer than the first buffer guesses
        self.assertEqual(tokenizer.decode(tokenizer.encode(text)), text)
        plan = unmask.plan(BUNDLED, max_concurrent=4, max_sequence_length=256, kv_cache=True)
        self.assertEqual(plan["fits"], 1)
        self.assertEqual(plan["max_concurrent"], 4)
        self.assertGreater(plan["sequence_state"], 0)
        halved = unmask.plan(BUNDLED, max_concurrent=4, max_sequence_length=256, kv_cache_precision="bf16")  # implies kv_cache
        self.assertEqual(unmask.plan(BUNDLED, max_concurrent=4, max_sequence_length=256, kv_cache_precision=2), halved)
        uncached = unmask.plan(BUNDLED, max_concurrent=4, max_sequence_length=256)
        self.assertEqual(plan["sequence_state"] - uncached["sequence_state"],
                         2 * (halved["sequence_state"] - uncached["sequence_state"]))

    def test_conversations_go_through_the_chat_template(self):
        tokenizer = self.model.tokenizer
        self.assertTrue(tokenizer.has_chat_format())
        messages = [{"role": "user", "content": "Set a timer for 5 minutes."},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"type": "function", "function": {"name": "set_timer", "arguments": {"minutes": 5}}}]},
                    {"role": "user", "content": "Add 2 and 3."}]
        text = tokenizer.apply_chat_template(messages)
        self.assertEqual(text, '<|user|>Set a timer for 5 minutes.<|assistant|>{"name": "set_timer", "arguments": '
                               '{"minutes": 5}}<|endoftext|><|user|>Add 2 and 3.<|assistant|>')
        self.assertEqual(tokenizer.encode_messages(messages), tokenizer.encode(text))
        self.assertFalse(tokenizer.apply_chat_template(messages, add_generation_prompt=False).endswith("<|assistant|>"))
        # The template's refusal: the bundled model has no system role.
        with self.assertRaises(unmask.InvalidArgument) as caught:
            tokenizer.apply_chat_template([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
        self.assertIn("not system", str(caught.exception))
        with self.assertRaises(unmask.InvalidArgument):
            tokenizer.apply_chat_template([{"role": "user", "text": "hi"}])

    def test_generate_answers_a_request(self):
        result = self.model.generate("What's the weather in Lisbon on May 14?")  # gen_length and steps 128
        self.assertEqual(result.text, '{"name": "get_weather", "arguments": {"city": "Lisbon", "date": "2026-05-14"}}')
        self.assertEqual(len(result.ids), 128)
        # One position a step, up to the end of the block of 16 that holds EOS (the rest become EOS).
        self.assertEqual(result.steps, 87)
        self.assertEqual(result.finish_reason, "eos")
        cached = [self.model.generate("What's the weather in Lisbon on May 14?", block_length=16,
                                      cache_mode="dual", cache_precision=precision) for precision in ("fp32", "bf16")]
        self.assertEqual(cached[1].text, cached[0].text)
        self.assertEqual(cached[0].text, result.text)
        with self.assertRaises(ValueError):
            unmask.generate_params(cache_precision="fp8")

    def test_a_model_shared_by_two_host_devices_answers_alike(self):
        with unmask.Model.load(BUNDLED, devices=2) as shared:
            result = shared.generate("What's the weather in Lisbon on May 14?")
        self.assertEqual(result.ids, self.model.generate("What's the weather in Lisbon on May 14?").ids)
        with self.assertRaises(unmask.InvalidArgument):
            unmask.Model.load(BUNDLED, devices=0)

    def test_engine_generates_streams_and_reports_stats(self):
        with unmask.Engine(self.model, max_concurrent_requests=4) as engine:
            settings = dict(threshold=0.9, cache_mode="dual")  # gen_length 128 in the model's blocks of 16
            requests = [engine.submit(p, **settings) for p in
                        ("Set a timer for 3 minutes for the tea.", "Convert 3967 EUR to GBP.")]
            streamed = engine.submit("Book a table at Sakura for 4 at 19:30.", stream=True, **settings)
            events = list(streamed.events())
            # The prompt's 40 tokens leave 8 positions in its last block: 9 blocks hold the 128. The 7th
            # holds EOS; once it is committed the rest are EOS too, and the last event counts all 9.
            self.assertEqual([e["kind"] for e in events], ["block"] * 7)
            self.assertEqual([e["completed_blocks"] for e in events], [1, 2, 3, 4, 5, 6, 9])
            self.assertEqual(events[-1]["tokens"], streamed.result().ids)
            self.assertIn('"book_table"', streamed.result().text)
            answers = [r.result() for r in requests]
            self.assertIn('"set_timer"', answers[0].text)
            self.assertEqual(answers[1].text,
                             '{"name": "convert_currency", "arguments": {"amount": 3967, "from": "EUR", "to": "GBP"}}')
            self.assertLess(answers[1].forwards, 32)  # threshold decoding (one position a step takes ~100)
            self.assertGreaterEqual(answers[1].timings["end_to_end_seconds"], 0)
            result = engine.generate([1, 2, 3], gen_length=8)
            self.assertEqual(len(result.ids), 8)
            stats = engine.stats()
            self.assertEqual(stats["requests_submitted"], 4)
            self.assertEqual(stats["requests_running"], 0)
            self.assertIn("unmask_num_requests_running", engine.metrics())
            for r in requests + [streamed]:
                r.close()

    def test_a_request_keeps_its_engine_and_a_model_outlives_its_engines(self):
        model = unmask.Model.load(BUNDLED)
        request = unmask.Engine(model).submit("Convert 3967 EUR to GBP.")  # the engine is not named
        self.assertIn('"convert_currency"', request.result().text)
        with self.assertRaises(unmask.InvalidArgument):
            model.close()  # the request's engine is still open
        request._engine.close()
        model.close()

    def test_a_request_can_be_cancelled(self):
        with unmask.Engine(self.model) as engine:
            # Seconds of work: EOS never sampled, so it does not end after the block that holds one.
            request = engine.submit("Convert 12 EUR to GBP.", gen_length=512, steps=512, logits_eos_inf=True)
            request.cancel()
            self.assertTrue(request.wait(30))
            self.assertEqual(request.info()["finish_reason"], 3)  # cancelled
            self.assertEqual(request.result().finish_reason, "cancelled")


if __name__ == "__main__":
    unittest.main()
