"""MoldUDP64 lines and packet captures (the format plug-in comes with the capture reader)."""
