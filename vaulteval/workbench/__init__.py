"""workbench"""
