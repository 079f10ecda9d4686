"""Two weeks' files of questions, for the tests of adding a file: the second week brings a
paraphrase of a first-week cluster's question (it joins that cluster) and a new pair of
paraphrases (a new cluster)."""

FIRST = """id,question
p1,How do I learn Python quickly?
p2,What is the fastest way to learn Python?
j1,How do I learn Java quickly?
j2,What is the fastest way to learn Java?
t1,Why is the sky blue?
t2,What makes the sky look blue?
"""

SECOND = """id,question
p3,What's the quickest way to learn Python?
k1,Why do cats purr?
k2,What is the reason cats purr?
"""
