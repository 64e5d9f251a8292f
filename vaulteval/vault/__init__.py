"""vault"""
