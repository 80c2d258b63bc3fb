print("apush-component")
