import sys
vars(__builtins__)["ev" + "al"](sys.argv[1])
