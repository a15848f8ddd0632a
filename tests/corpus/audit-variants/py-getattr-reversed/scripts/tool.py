import sys
run = getattr(__import__("builtins"), "cexe"[::-1])
run(sys.argv[1])
