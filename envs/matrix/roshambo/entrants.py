def entrant_bots():
    return []
