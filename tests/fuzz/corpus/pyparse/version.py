__version__ = '2.11.0+cu130'
cuda: Optional[str] = '13.0'
hip = None
