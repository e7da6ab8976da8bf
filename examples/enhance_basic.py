"""Enhance a few prompts for different generators and print the results.

Run: python examples/enhance_basic.py
"""

import promptx

enhancer = promptx.Enhancer()  # loads the embedded model once
for target, prompt in [
    ("video", "a cat on a skateboard"),
    ("flux", "a lighthouse in a storm"),
    ("sdxl", "a fox in the snow"),
]:
    result = enhancer.enhance(prompt, target, seed=1)
    status = (
        "fallback: " + result.reason
        if result.fallback
        else f"{result.stats.tokens_per_s:.1f} tokens/s"
    )
    print(
        f"[{result.target}] {prompt!r} ({status})\n{result.text}\n"
        f"negative: {result.negative_prompt}\n"
    )
