"""rerank"""
