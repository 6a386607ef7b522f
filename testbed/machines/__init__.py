"""machines"""
