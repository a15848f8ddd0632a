def fine():
    pass
