# env: codecontests
# problem: file_io_secret
# expect: wrong_answer
# Overwrites input.txt and makes output.txt a link to it, hoping the judge reads back what it wrote
# to the test's input or compares the input with itself: the test's input and answer are the judge's.
import os

with open("input.txt", "w") as given:
    given.write("EVALFARM-SECRET-guess\n")
os.symlink("input.txt", "output.txt")
