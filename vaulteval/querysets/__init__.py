"""querysets"""
