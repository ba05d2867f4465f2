"""The Python bindings in use: plan, load the bundled model, answer a request, then stream
several through an engine. usage: UNMASK_LIBRARY_PATH=build/capi python3 example.py [MODEL_DIR]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unmask  # noqa: E402

model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                               "models", "toolcall-llada-3m")
plan = unmask.plan(model_dir, max_concurrent=2, max_sequence_length=256)  # a prompt of characters and 128 more
print("plan: %d bytes of weights, fits: %s" % (plan["weights"], bool(plan["fits"])))

with unmask.Model.load(model_dir) as model:
    # gen_length and steps 128 by default, in the model's own blocks of 16; it ends after the block holding EOS.
    result = model.generate("What's the weather in Lisbon on May 14?")
    print("generate:", result.text, "(%d steps)" % result.steps)

    with unmask.Engine(model, max_concurrent_requests=2) as engine:
        settings = dict(threshold=0.9, cache_mode="dual")
        request = engine.submit("Set a timer for 3 minutes for the tea.", stream=True, **settings)
        for event in request.events():  # one per committed block; after the block holding EOS the rest are done too
            print("block %d committed" % event["completed_blocks"])
        print("engine:", request.result().text)
        try:
            engine.generate("hi", block_length=12)  # not the model's diffusion block size (16)
        except unmask.InvalidArgument as e:
            print("error:", e.status, "-", e.message)
        print("stats: %d requests" % engine.stats()["requests_submitted"])
