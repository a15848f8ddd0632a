import sys
getattr(__builtins__, "ex" + "ec")(sys.argv[1])
