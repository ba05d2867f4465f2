"""The Python bindings in use: plan, load the bundled model, answer a request, then stream
several through an engine. usage: UNMASK_LIBRARY_PATH=build/capi python3 example.py [MODEL_DIR]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unmask  # noqa: E402

model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                               "models", "toolcall-llada-3m")
plan = unmask.plan(model_dir, max_concurrent=2, max_sequence_length=128)
print("plan: %d bytes of weights, fits: %s" % (plan["weights"], bool(plan["fits"])))

with unmask.Model.load(model_dir) as model:
    result = model.generate("What's the weather in Lisbon on May 14?", gen_length=48)
    print("generate:", result.text, "(%d steps)" % result.steps)

    with unmask.Engine(model, max_concurrent_requests=2) as engine:
        settings = dict(gen_length=48, block_length=12, threshold=0.9, cache_mode="dual")
        request = engine.submit("Set a timer for 3 minutes for the tea.", stream=True, **settings)
        for event in request.events():
            print("block %d committed" % event["completed_blocks"])
        print("engine:", request.result().text)
        try:
            engine.generate("hi", gen_length=48, block_length=5)
        except unmask.InvalidArgument as e:
            print("error:", e.status, "-", e.message)
        print("stats: %d requests" % engine.stats()["requests_submitted"])
