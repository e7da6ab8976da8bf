"""engine: the decoder behind promptx.

A lean Llama-family runtime (``model``), a reference autoregressive decoder
(``autoregressive``), and an EAGLE-style tree speculative decoder (``drafter``,
``tree``, ``verify``, ``speculative``). ``Generator`` owns a loaded model.
engine never imports promptx.
"""
